/**
 * ContextBuilder: packs the system prompt and the messages for one model call.
 * The system prompt has no clock or per-turn data, so with the sorted tool list it forms a byte-stable,
 * cacheable prefix. Per-turn facts (time, channel, chat id) go at the end of the user message.
 */
import { extname, join } from 'node:path';
import { type EntryLimits, formatHistoryTimestamp, HistoryStore } from '../memory/history.js';
import { historyVisibleTo } from '../memory/history-visibility.js';
import {
  type ArchivedSummary,
  archivedSummarySection,
  readArchivedSummary,
  recentHistorySection,
} from '../memory/prompts.js';
import type { ChatMessage, ContentPart } from '../providers/types.js';
import { readCheckedFile } from '../security/checked-open.js';
import { WorkspaceFs, WorkspaceFsError } from '../security/workspace-fs.js';
import { appendRuntimeContext, type RuntimeContextBlock, wrapRuntimeContext } from '../session/runtime-context.js';
import type { SkillsLoader } from '../skills/loader.js';
import { documentKind } from '../tools/documents/kinds.js';
import { type Logger, silentLogger } from '../util/log.js';
import { identitySection, TOOL_CONTRACT } from './prompts.js';

const SECTION_SEPARATOR = '\n\n---\n\n';
const BOOTSTRAP_FILES = ['AGENTS.md', 'SOUL.md', 'USER.md'] as const;
/** nanobot's bounds for `# Recent History`: the newest entries since the last Dream that fit both. */
const RECENT_HISTORY_LIMITS = { maxEntries: 50, maxTokens: 8_000 } as const;

export interface ContextBuilderOptions {
  workspace: string;
  /** Directory of pristine workspace templates: a file identical to its template carries no information. */
  templatesDir?: string;
  timezone?: string;
  platform?: string;
  nodeVersion?: string;
  /** Source of `# Recent History`; defaults to `<workspace>/memory/history.jsonl`. */
  history?: HistoryStore;
  recentHistoryLimits?: Omit<EntryLimits, 'visible'>;
  /** `agents.defaults.unifiedSession`: every channel is one conversation, so history is shared between them. */
  unifiedSession?: boolean;
  /** Workspace and built-in skills: always-on ones and a compact list go in the prompt, `$name` loads one per turn. */
  skills?: SkillsLoader;
  /** Warns when a prompt file is refused (a link out of the workspace, a FIFO). */
  log?: Logger;
}

/** Prompt files larger than this are refused: one planted huge file must not be read into every prompt. */
const MAX_PROMPT_FILE_BYTES = 1024 * 1024;

/** Per-session parts of the system prompt. They follow the fixed sections, so the cacheable prefix stays long. */
export interface PromptSessionParts {
  /** The archived-context summary; read from `session.metadata._last_summary` when a session is given. */
  summary?: ArchivedSummary;
  /** The session the prompt is for: `# Recent History` shows only its own entries (history-visibility.ts). */
  session?: { key?: string; metadata: Record<string, unknown> };
}

export interface RuntimeInfo {
  channel: string;
  chatId: string;
  now?: Date;
}

export class ContextBuilder {
  private readonly history: HistoryStore;
  /** File texts by path, reused while size and mtime are unchanged: every turn reads these files. */
  private readonly files = new Map<string, { mtimeMs: number; size: number; text: string }>();
  private readonly templates = new Map<string, string | undefined>();
  /** User messages that carry `$name` skills for their own turn, mapped to the copy kept in the session. */
  private readonly withoutTurnSkills = new WeakMap<ChatMessage, ChatMessage>();
  private readonly wfs: WorkspaceFs;
  private readonly warned = new Set<string>();

  constructor(private readonly options: ContextBuilderOptions) {
    this.history =
      options.history ??
      new HistoryStore(options.workspace, {
        timezone: options.timezone ?? 'UTC',
        ...(options.log ? { log: options.log } : {}),
      });
    this.wfs = new WorkspaceFs(options.workspace);
  }

  buildSystemPrompt(sessionParts: PromptSessionParts = {}): string {
    const { workspace } = this.options;
    const parts = [
      identitySection({
        workspace,
        platform: this.options.platform ?? `${process.platform} ${process.arch}`,
        nodeVersion: this.options.nodeVersion ?? process.versions.node,
      }),
    ];
    for (const name of BOOTSTRAP_FILES) {
      const text = this.readUserFile(name);
      if (text) parts.push(`## ${name}\n\n${text}`);
    }
    parts.push(TOOL_CONTRACT);
    // Skills change less often than memory (Dream rewrites it), so they come first in the cached prefix.
    if (this.options.skills) parts.push(...this.options.skills.systemPromptSections());
    const memory = this.readUserFile(join('memory', 'MEMORY.md'));
    if (memory) parts.push(`# Memory\n\n${memory}`);
    // Below here things change: history grows as sessions consolidate, the summary is per session.
    const visible = historyVisibleTo(sessionParts.session?.key, this.options.unifiedSession ?? false);
    const recent = this.history.entriesAfter(this.history.readDreamCursor(), {
      ...RECENT_HISTORY_LIMITS,
      ...this.options.recentHistoryLimits,
      ...(visible ? { visible } : {}),
    });
    if (recent.length > 0) parts.push(recentHistorySection(recent));
    const summary =
      sessionParts.summary ?? (sessionParts.session ? readArchivedSummary(sessionParts.session.metadata) : undefined);
    if (summary) parts.push(archivedSummarySection(summary));
    return parts.join(SECTION_SEPARATOR);
  }

  /**
   * The new user message with the runtime context appended, and before it the full instructions of any skill the
   * message names as `$name`. Those are for this turn only: save `forHistory(message)` in the session instead.
   */
  buildUserMessage(typed: string | ContentPart[], runtime: RuntimeInfo): ChatMessage {
    const block: RuntimeContextBlock = {
      source: 'runtime',
      content: runtimeContextBlock(runtime, this.options.timezone ?? 'UTC'),
    };
    const content = defuseRuntimeMarker(typed);
    const plain = userMessage(content, [block]);
    const skills = this.options.skills?.invokedSkills(textOf(content));
    if (!skills) return plain;
    const message = userMessage(content, [{ source: 'explicit_skills', content: skills }, block]);
    this.withoutTurnSkills.set(message, plain);
    return message;
  }

  /**
   * The message as the session keeps it: without the skills that `$name` loaded for its own turn, and without
   * inline attachment images (their `[image: path]` line stays, so a later turn can read the file again).
   */
  forHistory(message: ChatMessage): ChatMessage {
    const kept = { ...(this.withoutTurnSkills.get(message) ?? message) };
    if (Array.isArray(kept.content)) kept.content = kept.content.filter((part) => !isInlineImage(part));
    return kept;
  }

  /** Trimmed file text, or undefined when missing, empty or still the unedited template. */
  private readUserFile(relPath: string): string | undefined {
    const text = this.readWorkspaceTrimmed(relPath);
    if (!text) return undefined;
    const template = this.options.templatesDir ? join(this.options.templatesDir, relPath) : undefined;
    if (template && this.readTemplate(template) === text) return undefined;
    return text;
  }

  /** Templates ship with the package and do not change while it runs: read once, no stat per turn. */
  private readTemplate(path: string): string | undefined {
    if (!this.templates.has(path)) {
      let text: string | undefined;
      try {
        text = readCheckedFile(path, () => true)
          .toString('utf8')
          .trim();
      } catch {
        text = undefined;
      }
      this.templates.set(path, text);
    }
    return this.templates.get(path);
  }

  /**
   * A workspace file through the workspace-file layer: a link out of the workspace, a FIFO or a huge file is left
   * out of the prompt with a warning (once per path), never read. The text is reused while size and mtime stay.
   */
  private readWorkspaceTrimmed(relPath: string): string | undefined {
    try {
      const stat = this.wfs.statSync(relPath);
      if (!stat?.isFile()) return undefined;
      const cached = this.files.get(relPath);
      if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached.text;
      const text = this.wfs.readTextSync(relPath, { maxBytes: MAX_PROMPT_FILE_BYTES }).trim();
      this.files.set(relPath, { mtimeMs: stat.mtimeMs, size: stat.size, text });
      this.warned.delete(relPath);
      return text;
    } catch (error) {
      if (error instanceof WorkspaceFsError) this.warnOnce(relPath, `${error.message}; left out of the prompt`);
      return undefined;
    }
  }

  private warnOnce(relPath: string, message: string): void {
    if (this.warned.has(relPath)) return;
    this.warned.add(relPath);
    (this.options.log ?? silentLogger).warn(message);
  }
}

/** The user message with the blocks appended, and nanobot's record of them (so a display removes exactly those). */
function userMessage(content: string | ContentPart[], blocks: RuntimeContextBlock[]): ChatMessage {
  const appended = appendRuntimeContext(content, blocks);
  return { role: 'user', content: appended.content, ...(appended.record ? { _runtime_context: appended.record } : {}) };
}

function textOf(content: string | ContentPart[]): string {
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

const INLINE_IMAGE_TYPES: Record<string, string> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
};
/** Providers refuse larger images (Anthropic: 5 MB); a bigger one is left for the model to open by path. */
const MAX_INLINE_IMAGE_BYTES = 5 * 1024 * 1024;

/**
 * A message's text plus the files that came with it (saved by a chat channel): each named by a `[kind: path]` line
 * (documents with a note that read_file reads them), and images also inlined for the model when `inlineImages`
 * (`forHistory` drops those again).
 */
export function withAttachments(
  text: string,
  media: readonly string[] | undefined,
  inlineImages = true,
): string | ContentPart[] {
  if (!media?.length) return text;
  const parts: ContentPart[] = text ? [{ type: 'text', text }] : [];
  for (const path of media) {
    const mime = INLINE_IMAGE_TYPES[extname(path).toLowerCase()];
    parts.push({ type: 'text', text: `[${mime ? 'image' : 'file'}: ${path}]${documentNote(path)}` });
    const image = mime && inlineImages ? readImage(path) : undefined;
    if (mime && image)
      parts.push({ type: 'image_url', image_url: { url: `data:${mime};base64,${image.toString('base64')}` } });
  }
  return parts;
}

/**
 * A document is never pasted into the prompt (a 300-page PDF would fill it): the model is told it can read it, and
 * reads what it needs with read_file when it needs it (upstream: `[Attachment: path]`, read on demand).
 */
function documentNote(path: string): string {
  const kind = documentKind(path);
  if (!kind) return '';
  const pages = kind === 'pdf' ? "; pages: '1-5' reads a page range" : '';
  return ` (${kind.toUpperCase()} document, not included here: read_file reads its text when you need it${pages})`;
}

/** An attachment's bytes when it is a regular file within the inline limit (a FIFO or device is never opened as one). */
function readImage(path: string): Buffer | undefined {
  try {
    return readCheckedFile(path, () => true, MAX_INLINE_IMAGE_BYTES);
  } catch {
    return undefined;
  }
}

function isInlineImage(part: ContentPart): boolean {
  return part.type === 'image_url' && part.image_url.url.startsWith('data:');
}

/** Time, channel and chat id between nanobot's runtime-context markers. */
export function runtimeContextBlock(runtime: RuntimeInfo, timezone: string): string {
  const now = runtime.now ?? new Date();
  return wrapRuntimeContext([
    `Current time: ${formatTime(now, timezone)}`,
    `Channel: ${runtime.channel}`,
    `Chat ID: ${runtime.chatId}`,
  ]);
}

/**
 * Any spelling a model might take for a runtime marker: `[Runtime Context]`, `[ runtime  context — … ]`,
 * `[/Runtime Context]`, `[RUNTIME CONTEXT: …]`…
 */
const TYPED_MARKER = /\[\s*\/?\s*runtime[\s_-]*context\b[^\]\n]*\]/gi;

/**
 * User text with every spelling of the runtime markers reworded, so the block nanobot appends is the only one the
 * model sees: a user cannot forge a channel, chat id or time. The rest of what they typed is kept.
 */
function defuseRuntimeMarker(content: string | ContentPart[]): string | ContentPart[] {
  const defuse = (text: string) => text.replace(TYPED_MARKER, '(runtime context, as typed by the user)');
  if (typeof content === 'string') return defuse(content);
  return content.map((part) => (part.type === 'text' ? { ...part, text: defuse(part.text) } : part));
}

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

function formatTime(now: Date, timezone: string): string {
  try {
    // UTC needs no Intl: building a time-zone formatter costs ~25 ms of ICU loading on the first turn.
    const weekday =
      timezone === 'UTC'
        ? WEEKDAYS[now.getUTCDay()]
        : new Intl.DateTimeFormat('en-US', { timeZone: timezone, weekday: 'long' }).format(now);
    return `${formatHistoryTimestamp(now, timezone)} (${weekday}, ${timezone})`;
  } catch {
    return `${formatHistoryTimestamp(now, 'UTC')} (UTC)`;
  }
}
