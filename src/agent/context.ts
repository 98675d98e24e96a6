/**
 * ContextBuilder: packs the system prompt and the messages for one model call.
 * The system prompt has no clock or per-turn data, so with the sorted tool list it forms a byte-stable,
 * cacheable prefix. Per-turn facts (time, channel, chat id) go at the end of the user message.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type EntryLimits, formatHistoryTimestamp, HistoryStore } from '../memory/history.js';
import {
  type ArchivedSummary,
  archivedSummarySection,
  readArchivedSummary,
  recentHistorySection,
} from '../memory/prompts.js';
import type { ChatMessage, ContentPart } from '../providers/types.js';
import { identitySection, TOOL_CONTRACT } from './prompts.js';

const SECTION_SEPARATOR = '\n\n---\n\n';
const BOOTSTRAP_FILES = ['AGENTS.md', 'SOUL.md', 'USER.md'] as const;
const RUNTIME_MARKER = '[Runtime Context]';
/** nanobot's bounds for `# Recent History`: the newest entries since the last Dream that fit both. */
const RECENT_HISTORY_LIMITS: Required<EntryLimits> = { maxEntries: 50, maxTokens: 8_000 };

export interface ContextBuilderOptions {
  workspace: string;
  /** Directory of pristine workspace templates: a file identical to its template carries no information. */
  templatesDir?: string;
  timezone?: string;
  platform?: string;
  nodeVersion?: string;
  /** Source of `# Recent History`; defaults to `<workspace>/memory/history.jsonl`. */
  history?: HistoryStore;
  recentHistoryLimits?: EntryLimits;
}

/** Per-session parts of the system prompt. They follow the fixed sections, so the cacheable prefix stays long. */
export interface PromptSessionParts {
  /** The archived-context summary; read from `session.metadata._last_summary` when a session is given. */
  summary?: ArchivedSummary;
  session?: { metadata: Record<string, unknown> };
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

  constructor(private readonly options: ContextBuilderOptions) {
    this.history = options.history ?? new HistoryStore(options.workspace, { timezone: options.timezone ?? 'UTC' });
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
    const memory = this.readUserFile(join('memory', 'MEMORY.md'));
    if (memory) parts.push(`# Memory\n\n${memory}`);
    // Below here things change: history grows as sessions consolidate, the summary is per session.
    const recent = this.history.entriesAfter(this.history.readDreamCursor(), {
      ...RECENT_HISTORY_LIMITS,
      ...this.options.recentHistoryLimits,
    });
    if (recent.length > 0) parts.push(recentHistorySection(recent));
    const summary =
      sessionParts.summary ?? (sessionParts.session ? readArchivedSummary(sessionParts.session.metadata) : undefined);
    if (summary) parts.push(archivedSummarySection(summary));
    return parts.join(SECTION_SEPARATOR);
  }

  /** The new user message with the runtime context appended. */
  buildUserMessage(content: string | ContentPart[], runtime: RuntimeInfo): ChatMessage {
    const block = runtimeContextBlock(runtime, this.options.timezone ?? 'UTC');
    if (typeof content === 'string') return { role: 'user', content: `${content}\n\n${block}` };
    return { role: 'user', content: [...content, { type: 'text', text: block }] };
  }

  /** Trimmed file text, or undefined when missing, empty or still the unedited template. */
  private readUserFile(relPath: string): string | undefined {
    const text = this.readTrimmed(join(this.options.workspace, relPath));
    if (!text) return undefined;
    const template = this.options.templatesDir ? join(this.options.templatesDir, relPath) : undefined;
    if (template && this.readTrimmed(template) === text) return undefined;
    return text;
  }

  private readTrimmed(path: string): string | undefined {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat?.isFile()) return undefined;
    const cached = this.files.get(path);
    if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached.text;
    const text = readFileSync(path, 'utf8').trim();
    this.files.set(path, { mtimeMs: stat.mtimeMs, size: stat.size, text });
    return text;
  }
}

export function runtimeContextBlock(runtime: RuntimeInfo, timezone: string): string {
  const now = runtime.now ?? new Date();
  return `${RUNTIME_MARKER}\nCurrent time: ${formatTime(now, timezone)}\nChannel: ${runtime.channel}\nChat ID: ${runtime.chatId}`;
}

/** Removes the runtime block from stored user text, for display. */
export function stripRuntimeContext(text: string): string {
  const at = text.lastIndexOf(`\n\n${RUNTIME_MARKER}`);
  return at === -1 ? text : text.slice(0, at);
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
