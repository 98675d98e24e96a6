/**
 * list_dir: directory entries (directories end in `/`), optionally recursive. Recursion skips VCS and
 * dependency folders and never follows symlinks, so it cannot wander out of the workspace or loop. The directory
 * is opened, then checked; subdirectories are opened relative to their opened parent, never through a link.
 */
import fs, { type Dirent } from 'node:fs';
import { z } from 'zod';
import { policyCheck } from '../../security/checked-open.js';
import { closeDir, type DirRef, openCheckedDirectory, openChildDirectory } from '../../security/checked-read.js';
import type { PathPolicy } from '../../security/workspace.js';
import { TimeSlicer } from '../search/search-common.js';
import { defineTool, fail, ok, type ToolResult } from '../types.js';
import { openFailure } from './open-failure.js';

export const DEFAULT_MAX_ENTRIES = 200;
/** Folders that are noise when listing recursively. */
export const SKIPPED_DIRS = new Set(['.git', 'node_modules', '__pycache__', '.venv', '.mypy_cache', '.pytest_cache']);
/** Stop counting after this many entries; enough to say "many more". */
const COUNT_LIMIT = 100_000;

export interface ListDirToolOptions {
  policy: PathPolicy;
}

const parameters = z.object({
  path: z.string().describe('Directory to list: relative to the workspace, absolute, or starting with ~.'),
  recursive: z.boolean().optional().describe('List subdirectories too (skips .git, node_modules and caches).'),
  max_entries: z
    .number()
    .int()
    .min(1)
    .max(10_000)
    .optional()
    .describe(`Maximum number of entries to return (default ${DEFAULT_MAX_ENTRIES}).`),
});

const byName = (a: Dirent, b: Dirent): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const render = (relative: string, entry: Dirent): string => (entry.isDirectory() ? `${relative}/` : relative);

const readSorted = (dir: DirRef): Dirent[] => fs.readdirSync(dir.anchor, { withFileTypes: true }).sort(byName);

/** Depth-first, sorted walk; collects up to `max` entries but keeps counting so omissions can be reported. */
async function walk(root: DirRef, max: number, signal: AbortSignal): Promise<{ entries: string[]; total: number }> {
  const entries: string[] = [];
  const slicer = new TimeSlicer(signal);
  let total = 0;
  const visit = async (dir: DirRef, prefix: string): Promise<void> => {
    await slicer.tick();
    let children: Dirent[];
    try {
      children = readSorted(dir);
    } catch {
      return; // unreadable subdirectory: skip it rather than fail the listing
    }
    for (const child of children) {
      if (total >= COUNT_LIMIT) return;
      const relative = prefix + child.name;
      total++;
      if (entries.length < max) entries.push(render(relative, child));
      if (!child.isDirectory() || SKIPPED_DIRS.has(child.name)) continue;
      let sub: DirRef;
      try {
        sub = openChildDirectory(dir, child.name, root);
      } catch {
        continue; // vanished, or swapped for a link or a file since it was listed: never followed
      }
      try {
        await visit(sub, `${relative}/`);
      } finally {
        closeDir(sub);
      }
    }
  };
  await visit(root, '');
  return { entries, total };
}

export function createListDirTool(options: ListDirToolOptions) {
  return defineTool({
    name: 'list_dir',
    description: 'List a directory. Directories end with `/`. Set recursive to include subdirectories.',
    parameters,
    concurrencySafe: true,
    async execute(args, ctx): Promise<ToolResult> {
      const resolved = options.policy.resolve(args.path, 'read');
      if (!resolved.ok) return fail(resolved.error);
      // Wording only; what is listed is decided on the opened directory.
      const stat = fs.statSync(resolved.path, { throwIfNoEntry: false });
      if (!stat) return fail(`Directory not found: ${args.path}`);
      if (!stat.isDirectory()) return fail(`${args.path} is not a directory. Use read_file to read a file.`);

      const max = args.max_entries ?? DEFAULT_MAX_ENTRIES;
      let dir: DirRef;
      try {
        dir = openCheckedDirectory(resolved.path, policyCheck(options.policy, 'read'));
      } catch (error) {
        return fail(openFailure(error, args.path, `Directory not found: ${args.path}`));
      }
      let listing: { entries: string[]; total: number };
      try {
        if (args.recursive) {
          listing = await walk(dir, max, ctx.signal);
        } else {
          const children = readSorted(dir);
          listing = {
            entries: children.slice(0, max).map((child) => render(child.name, child)),
            total: children.length,
          };
        }
      } catch (error) {
        return fail(`Could not list ${args.path}: ${error instanceof Error ? error.message : String(error)}`);
      } finally {
        closeDir(dir);
      }
      if (listing.total === 0) return ok(`(empty directory: ${args.path})`);
      const omitted = listing.total - listing.entries.length;
      const more = listing.total >= COUNT_LIMIT ? 'at least ' : '';
      const note =
        omitted > 0
          ? `\n\n(${more}${omitted} more entries omitted; raise max_entries or list a subdirectory to see them.)`
          : '';
      return ok(listing.entries.join('\n') + note);
    },
  });
}
