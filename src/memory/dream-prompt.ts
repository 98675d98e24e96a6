/**
 * Dream's instructions and the input message it works from. The system prompt can be replaced per workspace with
 * `prompts/dream.md`; the input (current files + new history) is always built here.
 */
import { WorkspaceFs } from '../security/workspace-fs.js';
import type { HistoryEntry } from './dream-history.js';
import { DREAM_WRITABLE_DESCRIPTION } from './dream-tools.js';

export const DREAM_PROMPT_OVERRIDE_PATH = 'prompts/dream.md';
/** Larger files are shown cut; the model can read_file the rest. */
const MAX_FILE_CHARS_SHOWN = 24_000;

export const DEFAULT_DREAM_PROMPT = `You are Dream, the memory editor of a personal AI assistant. You run in the background, with nobody to ask.

You receive the assistant's memory files as they are now and the newest entries of its conversation history. Your job: move every durable fact from that history into the one file where it belongs, and leave those files cleaner than you found them.

Where facts go (each fact in exactly one place, nothing left without a home):
- SOUL.md: the assistant itself: its name, persona, tone, standing behaviour the user asked of it.
- USER.md: the user: name, location, time zone, language, preferences, people and things that matter to them.
- memory/MEMORY.md: everything else worth keeping: ongoing projects, decisions, facts about the user's world, accounts, locations of things, commitments and dates.
- skills/<name>/SKILL.md: a procedure the assistant had to work out and will need again (steps, commands, gotchas). Only when it is reusable; start the file with a short front matter (name, description).

How to edit:
- Be a ruthless editor, not a logger. Skip small talk, one-off requests, anything already recorded, and anything that stops mattering after today.
- Merge duplicates and near-duplicates into one line. Keep each file organised under short headings, one fact per bullet, dated where time matters ("2026-03: moved to Berlin").
- Never delete information unless the history corrects or supersedes it; then replace the old statement with the new one (and keep the old one only if the change itself matters).
- Keep files concise. Prefer edit_file with a small, unique old_text over rewriting a whole file. Never make an edit that changes nothing.
- You may only write ${DREAM_WRITABLE_DESCRIPTION}. History and cursor files are not yours to touch.
- If nothing in the history is worth keeping, change nothing.

When you are done, reply with one or two sentences saying what you changed (or that nothing needed changing).`;

/**
 * The workspace's `prompts/dream.md` when present and non-empty, else the built-in prompt. Read through the
 * workspace-file layer: a link out of the workspace (or a FIFO, or a huge file) gets the built-in prompt.
 */
export async function loadDreamPrompt(workspace: string): Promise<string> {
  const custom = await new WorkspaceFs(workspace)
    .readText(DREAM_PROMPT_OVERRIDE_PATH, { maxBytes: 256 * 1024 })
    .catch(() => '');
  return custom.trim() ? custom : DEFAULT_DREAM_PROMPT;
}

export interface DreamInput {
  files: Array<{ path: string; content: string | undefined }>;
  skills: string[];
  entries: HistoryEntry[];
  now: Date;
}

export function buildDreamInput(input: DreamInput): string {
  const sections = [`Current time: ${input.now.toISOString()}`, '# Current memory files'];
  for (const file of input.files) {
    if (file.content === undefined) {
      sections.push(`## ${file.path}\n(does not exist yet)`);
      continue;
    }
    const shown =
      file.content.length > MAX_FILE_CHARS_SHOWN
        ? `${file.content.slice(0, MAX_FILE_CHARS_SHOWN)}\n[… cut at ${MAX_FILE_CHARS_SHOWN} of ${file.content.length} characters; read_file ${file.path} for the rest]`
        : file.content;
    sections.push(`## ${file.path}\n<file>\n${shown.trimEnd()}\n</file>`);
  }
  sections.push(
    `# Existing skills\n${input.skills.length > 0 ? input.skills.map((skill) => `- ${skill}`).join('\n') : '(none)'}`,
  );
  const first = input.entries[0]?.cursor;
  const last = input.entries.at(-1)?.cursor;
  sections.push(`# New history entries (${input.entries.length}, cursor ${first}–${last})`);
  for (const entry of input.entries) {
    const where = entry.session_key ? ` (${entry.session_key})` : '';
    sections.push(`[${entry.timestamp}]${where}\n${entry.content.trim()}`);
  }
  sections.push('Update the memory files from these entries now.');
  return sections.join('\n\n');
}
