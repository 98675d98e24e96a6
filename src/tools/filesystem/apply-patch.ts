/**
 * apply_patch: several edits across files as one all-or-nothing change (nanobot's JSON form, not Codex
 * patch text). Every edit is validated and every new content computed in memory first; only then are
 * files written, each atomically, and a failed write restores the files already written. `replace` uses
 * edit_file's matching cascade (exact, whitespace-tolerant, quote-normalised) and must match once.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { policyCheck, removeCheckedEmptyDir } from '../../security/checked-open.js';
import { type PathPolicy, realpathNearest, withContainedDirectory } from '../../security/workspace.js';
import { defineTool, fail, ok, type ToolResult } from '../types.js';
import { readContained, writeFileContained } from './contained-write.js';
import { applyMatches, findMatches, type MatchStrategy, notFoundMessage, type TextMatch } from './edit-match.js';
import { countLines } from './write-file.js';

export const MAX_PATCH_EDITS = 20;

export interface ApplyPatchToolOptions {
  policy: PathPolicy;
}

const editSchema = z.object({
  path: z.string().describe('File to change: relative to the workspace, absolute, or starting with ~.'),
  action: z
    .enum(['replace', 'add'], { error: "action must be 'replace' or 'add' (deleting files is not supported)" })
    .describe('replace: swap old_text for new_text in an existing file. add: create a new file.'),
  old_text: z
    .string()
    .nullish()
    .describe('replace only: text to find; must match exactly once (include surrounding lines).'),
  new_text: z.string().nullish().describe('replace: the replacement text. add: the whole content of the new file.'),
});

const parameters = z.object({
  edits: z
    .array(editSchema)
    .min(1)
    .max(MAX_PATCH_EDITS)
    .describe(`1 to ${MAX_PATCH_EDITS} edits, applied in order; several may target the same file.`),
  dry_run: z.boolean().optional().describe('Validate and report what would change without writing anything.'),
});

type PatchEdit = z.infer<typeof editSchema>;

/** One file's pending change: its content as it will be after every edit that targets it. */
interface PlannedFile {
  realPath: string;
  display: string;
  /** Bytes on disk before the patch; undefined for a file the patch creates. */
  original: Buffer | undefined;
  bom: string;
  crlf: boolean;
  /** LF text without the BOM. */
  content: string;
  /** Line counts summed over the replacements (unused for new files, which report their length). */
  added: number;
  removed: number;
  notes: Set<string>;
}

/** A validation problem: reported to the model, nothing written. */
class PatchError extends Error {}

const STRATEGY_NOTE: Record<MatchStrategy, string | undefined> = {
  exact: undefined,
  whitespace: 'matched ignoring indentation/whitespace',
  quotes: 'matched ignoring curly vs straight quotes',
  'quotes+whitespace': 'matched ignoring whitespace and quote style',
};

const toLf = (text: string): string => text.replace(/\r\n/g, '\n');
const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function displayPath(realPath: string, realWorkspace: string): string {
  const relative = path.relative(realWorkspace, realPath);
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return realPath;
  return relative.split(path.sep).join('/');
}

/** Lines added and removed by one replacement, counted over the whole lines it touches. */
function replacementDelta(content: string, match: TextMatch): { added: number; removed: number } {
  const lineStart = content.lastIndexOf('\n', match.start - 1) + 1;
  const nextNewline = content.indexOf('\n', match.end);
  const lineEnd = nextNewline === -1 ? content.length : nextNewline;
  const before = content.slice(lineStart, lineEnd).split('\n');
  const after = (content.slice(lineStart, match.start) + match.replacement + content.slice(match.end, lineEnd)).split(
    '\n',
  );
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head++;
  let tail = 0;
  while (
    tail < before.length - head &&
    tail < after.length - head &&
    before[before.length - 1 - tail] === after[after.length - 1 - tail]
  ) {
    tail++;
  }
  return { added: after.length - head - tail, removed: before.length - head - tail };
}

async function loadExisting(policy: PathPolicy, realPath: string, display: string): Promise<PlannedFile> {
  const notFound = `file not found: ${display}. Use action "add" to create it.`;
  const stat = await fs.stat(realPath).catch(() => undefined);
  if (!stat) throw new PatchError(notFound);
  if (!stat.isFile()) throw new PatchError(`${display} is not a regular file.`);
  // Wording above; what is patched is what this open-then-check read returns.
  const original = await readContained(policy, realPath);
  if (original === undefined) throw new PatchError(notFound);
  let raw: string;
  try {
    raw = utf8.decode(original);
  } catch {
    throw new PatchError(`${display} is not UTF-8 text and cannot be patched.`);
  }
  const bom = raw.startsWith('\uFEFF') ? '\uFEFF' : '';
  const body = raw.slice(bom.length);
  const base = { realPath, display, original, bom, crlf: body.includes('\r\n'), content: toLf(body) };
  return { ...base, added: 0, removed: 0, notes: new Set() };
}

async function planAdd(
  edit: PatchEdit,
  realPath: string,
  display: string,
  planned: PlannedFile | undefined,
): Promise<PlannedFile> {
  if (typeof edit.new_text !== 'string') throw new PatchError('new_text is required for action "add".');
  const onDisk = await fs.lstat(realPath).then(
    () => true,
    () => false,
  );
  if (planned || onDisk) {
    throw new PatchError(`${display} already exists; "add" only creates new files. Use action "replace" to edit it.`);
  }
  const content = toLf(edit.new_text);
  const crlf = edit.new_text.includes('\r\n');
  return { realPath, display, original: undefined, bom: '', crlf, content, added: 0, removed: 0, notes: new Set() };
}

function checkReplaceArgs(edit: PatchEdit): { oldText: string; newText: string } {
  if (!edit.old_text) throw new PatchError('old_text is required for action "replace" (to create a file use "add").');
  if (typeof edit.new_text !== 'string') {
    throw new PatchError('new_text is required for action "replace" (use "" to remove the text).');
  }
  return { oldText: toLf(edit.old_text), newText: toLf(edit.new_text) };
}

function planReplace(oldText: string, newText: string, file: PlannedFile): void {
  const found = findMatches(file.content, oldText, newText);
  if (!found) throw new PatchError(notFoundMessage(file.display, file.content, oldText));
  if (found.matches.length > 1) {
    const lines = found.matches.map((match) => match.line).join(', ');
    throw new PatchError(
      `old_text matches ${found.matches.length} locations in ${file.display} (lines ${lines}). ` +
        'Include more surrounding lines so it matches exactly once.',
    );
  }
  const match = found.matches[0] as TextMatch;
  const updated = applyMatches(file.content, [match]);
  if (updated === file.content) throw new PatchError('this edit would change nothing (new_text equals the match).');
  const delta = replacementDelta(file.content, match);
  file.content = updated;
  file.added += delta.added;
  file.removed += delta.removed;
  const note = STRATEGY_NOTE[found.strategy];
  if (note) file.notes.add(note);
}

/** Validates every edit and computes the final content of every file, touching nothing on disk. */
async function planPatch(policy: PathPolicy, edits: PatchEdit[]): Promise<Map<string, PlannedFile>> {
  const realWorkspace = realpathNearest(policy.workspace);
  const files = new Map<string, PlannedFile>();
  for (const [index, edit] of edits.entries()) {
    const where = `edit ${index + 1} of ${edits.length} (${edit.path})`;
    const resolved = policy.resolve(edit.path, 'write');
    if (!resolved.ok) throw new PatchError(`${where}: ${resolved.error.replace(/^Error: /, '')}`);
    const realPath = resolved.path;
    const display = displayPath(realPath, realWorkspace);
    try {
      if (edit.action === 'add') {
        files.set(realPath, await planAdd(edit, realPath, display, files.get(realPath)));
      } else {
        const { oldText, newText } = checkReplaceArgs(edit);
        const file = files.get(realPath) ?? (await loadExisting(policy, realPath, display));
        planReplace(oldText, newText, file);
        files.set(realPath, file);
      }
    } catch (error) {
      throw new PatchError(`${where}: ${errorText(error)}`);
    }
  }
  return files;
}

const serialise = (file: PlannedFile): string =>
  file.bom + (file.crlf ? file.content.replace(/\n/g, '\r\n') : file.content);

interface WrittenFile {
  file: PlannedFile;
  createdDirs: string[];
}

/** Puts every written file back as it was; returns the files it could not restore. */
async function rollBack(policy: PathPolicy, written: WrittenFile[]): Promise<string[]> {
  const unrestored: string[] = [];
  for (const { file, createdDirs } of [...written].reverse()) {
    try {
      if (file.original) {
        await writeFileContained(policy, file.realPath, file.original);
      } else {
        await withContainedDirectory(policy, path.dirname(file.realPath), (dir) =>
          fs.rm(path.join(dir.anchor, path.basename(file.realPath)), { force: true }),
        );
        // Through each opened, re-checked parent: a parent swapped for a symlink since is refused, not followed.
        // Best effort: a directory the sandbox filled or moved meanwhile stays (the file itself is gone).
        for (const created of [...createdDirs].reverse()) {
          try {
            removeCheckedEmptyDir(created, policyCheck(policy, 'write'));
          } catch {}
        }
      }
    } catch (error) {
      unrestored.push(`${file.display} (${errorText(error)})`);
    }
  }
  return unrestored;
}

function summaryLine(file: PlannedFile): string {
  const stats = file.original ? `+${file.added} −${file.removed}` : `+${countLines(file.content)}`;
  const notes = file.notes.size > 0 ? `; ${[...file.notes].join('; ')}` : '';
  return `${file.original ? 'M' : 'A'} ${file.display} (${stats}${notes})`;
}

export function createApplyPatchTool(options: ApplyPatchToolOptions) {
  const { policy } = options;
  return defineTool({
    name: 'apply_patch',
    description:
      'Apply several edits, across one or more files, as a single all-or-nothing change. Each edit is ' +
      '{path, action, old_text, new_text}: "replace" swaps old_text (must match exactly once; small ' +
      'whitespace or quote differences are tolerated) for new_text; "add" creates a new file with new_text. ' +
      'If any edit fails, nothing is written. Set dry_run to preview.',
    parameters,
    async execute(args): Promise<ToolResult> {
      let files: Map<string, PlannedFile>;
      try {
        files = await planPatch(policy, args.edits);
      } catch (error) {
        if (!(error instanceof PatchError)) throw error;
        return fail(`apply_patch failed at ${error.message}\nNo files were changed.`);
      }
      const summary = [...files.values()].map(summaryLine).join('\n');
      const edits = `${args.edits.length} edit${args.edits.length === 1 ? '' : 's'}`;
      const fileCount = `${files.size} file${files.size === 1 ? '' : 's'}`;
      if (args.dry_run) return ok(`Dry run, nothing written. ${edits} would change ${fileCount}:\n${summary}`);

      const written: WrittenFile[] = [];
      for (const file of files.values()) {
        try {
          written.push({ file, createdDirs: await writeFileContained(policy, file.realPath, serialise(file)) });
        } catch (error) {
          const unrestored = await rollBack(policy, written);
          const restoredNote =
            unrestored.length === 0
              ? written.length > 0
                ? `Rolled back the ${written.length} file(s) already written; no files were changed.`
                : 'No files were changed.'
              : `Rollback FAILED for: ${unrestored.join(', ')}. Check these files.`;
          return fail(`apply_patch could not write ${file.display}: ${errorText(error)}\n${restoredNote}`);
        }
      }
      return ok(`Applied ${edits} to ${fileCount}:\n${summary}`);
    },
  });
}
