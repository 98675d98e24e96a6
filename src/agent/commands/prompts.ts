/**
 * `/dream-prompt [init]` and `/evaluator-prompt [init]` (nanobot's commands): show which instructions Dream and the
 * heartbeat's notification gate use in this workspace, and with `init` write the built-in one into
 * `prompts/dream.md` / `prompts/evaluator.md` as an editable copy. An existing non-empty file is never overwritten.
 */
import {
  DEFAULT_EVALUATOR_PROMPT,
  EVALUATOR_PROMPT_PATH,
  evaluatorPrompt,
  readWorkspacePrompt,
} from '../../heartbeat/evaluator-prompt.js';
import { DEFAULT_DREAM_PROMPT, DREAM_PROMPT_OVERRIDE_PATH, loadDreamPrompt } from '../../memory/dream-prompt.js';
import { WorkspaceFs } from '../../security/workspace-fs.js';
import type { Command } from './types.js';

interface PromptFile {
  command: string;
  /** What the instructions are, as the reply names them. */
  what: string;
  path: string;
  fallback: string;
  effective: (workspace: string) => Promise<string>;
  /** One line on what editing the file changes. */
  editHint: string;
}

const FILES: PromptFile[] = [
  {
    command: '/dream-prompt',
    what: 'Dream memory instructions',
    path: DREAM_PROMPT_OVERRIDE_PATH,
    fallback: DEFAULT_DREAM_PROMPT,
    effective: loadDreamPrompt,
    editHint: 'Edit it to tell Dream how to organise memory here; it replaces the built-in instructions.',
  },
  {
    command: '/evaluator-prompt',
    what: 'Heartbeat evaluator prompt',
    path: EVALUATOR_PROMPT_PATH,
    fallback: DEFAULT_EVALUATOR_PROMPT,
    effective: evaluatorPrompt,
    editHint:
      'Edit it to change when heartbeat results are sent; it must still ask for the evaluate_notification tool, ' +
      'or the gate stays silent.',
  },
];

export function promptCommands(workspace: string): Command[] {
  return FILES.map((file) => ({
    name: file.command,
    usage: `${file.command} [init]`,
    description:
      file.command === '/dream-prompt'
        ? "show Dream's memory instructions; init makes an editable copy in prompts/dream.md"
        : "show the heartbeat evaluator's prompt; init makes an editable copy in prompts/evaluator.md",
    tier: 'prefix',
    run: async (ctx) => {
      const args = ctx.args.trim().toLowerCase();
      if (args === 'init') return init(workspace, file);
      if (args) return `Usage: ${file.command} [init]`;
      return show(workspace, file);
    },
  }));
}

async function show(workspace: string, file: PromptFile): Promise<string> {
  const custom = (await readWorkspacePrompt(workspace, file.path)) !== undefined;
  const text = await file.effective(workspace);
  const status = custom
    ? [
        `${file.what}: custom for this workspace`,
        `- Path: ${file.path}`,
        '- Delete or empty it to use the built-in one.',
      ]
    : [`${file.what}: built-in`, `- Editable file: ${file.path}`, `- Run \`${file.command} init\` to create it.`];
  return [...status, '', 'In effect:', '', fence(text)].join('\n');
}

async function init(workspace: string, file: PromptFile): Promise<string> {
  const fs = new WorkspaceFs(workspace);
  try {
    const stat = fs.lstatSync(file.path);
    if (stat && !stat.isFile()) return `${file.path} exists and is not a regular file; left as it is.`;
    if (stat && (await fs.readText(file.path, { maxBytes: 1024 * 1024 })).trim()) {
      return `${file.what} already exist at ${file.path}. Edit that file, or delete or empty it to use the built-in one.`;
    }
    fs.mkdirSync('prompts', { mode: 0o755 });
    await fs.writeFileAtomic(file.path, `${file.fallback}\n`);
  } catch (error) {
    return `Could not write ${file.path}: ${error instanceof Error ? error.message : String(error)}`;
  }
  return `Created ${file.path} with the built-in ${file.what.toLowerCase()}. ${file.editHint}`;
}

/** A code fence longer than any backtick run in the text, so the prompt shows verbatim. */
function fence(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const bar = '`'.repeat(longest + 1);
  return `${bar}\n${text}\n${bar}`;
}
