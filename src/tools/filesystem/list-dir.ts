/**
 * list_dir: directory entries (directories end in `/`), optionally recursive. Recursion skips VCS and
 * dependency folders and never follows symlinks, so it cannot wander out of the workspace or loop.
 */
import type { Dirent } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { PathPolicy } from '../../security/workspace.js';
import { defineTool, fail, ok, type ToolResult } from '../types.js';

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

async function readSorted(dir: string): Promise<Dirent[]> {
  return (await fs.readdir(dir, { withFileTypes: true })).sort(byName);
}

/** Depth-first, sorted walk; collects up to `max` entries but keeps counting so omissions can be reported. */
async function walk(root: string, max: number): Promise<{ entries: string[]; total: number }> {
  const entries: string[] = [];
  let total = 0;
  const visit = async (dir: string, prefix: string): Promise<void> => {
    let children: Dirent[];
    try {
      children = await readSorted(dir);
    } catch {
      return; // unreadable subdirectory: skip it rather than fail the listing
    }
    for (const child of children) {
      if (total >= COUNT_LIMIT) return;
      const relative = prefix + child.name;
      total++;
      if (entries.length < max) entries.push(render(relative, child));
      if (child.isDirectory() && !SKIPPED_DIRS.has(child.name)) await visit(path.join(dir, child.name), `${relative}/`);
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
    async execute(args): Promise<ToolResult> {
      const resolved = options.policy.resolve(args.path, 'read');
      if (!resolved.ok) return fail(resolved.error);
      const stat = await fs.stat(resolved.path).catch(() => undefined);
      if (!stat) return fail(`Directory not found: ${args.path}`);
      if (!stat.isDirectory()) return fail(`${args.path} is not a directory. Use read_file to read a file.`);

      const max = args.max_entries ?? DEFAULT_MAX_ENTRIES;
      let listing: { entries: string[]; total: number };
      try {
        if (args.recursive) {
          listing = await walk(resolved.path, max);
        } else {
          const children = await readSorted(resolved.path);
          listing = {
            entries: children.slice(0, max).map((child) => render(child.name, child)),
            total: children.length,
          };
        }
      } catch (error) {
        return fail(`Could not list ${args.path}: ${error instanceof Error ? error.message : String(error)}`);
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
