/**
 * find_files: locate files (or directories) by name fragment, glob or type, honouring .gitignore like
 * grep. Results are workspace-relative, sorted by path or newest first, and paged with head_limit/offset.
 */
import { z } from 'zod';
import type { PathPolicy } from '../../security/workspace.js';
import { defineTool, fail, ok, type ToolResult } from '../types.js';
import { fileTypeMatcher } from './file-types.js';
import { globMatcher, pagingNote, queryMatcher, resolveSearchRoot, searchFailure } from './search-common.js';
import { type WalkEntry, type WalkState, walkSearchRoot } from './walk.js';

export const DEFAULT_FIND_HEAD_LIMIT = 200;

export interface FindFilesToolOptions {
  policy: PathPolicy;
}

const parameters = z.object({
  path: z.string().optional().describe('Directory to search (default: the workspace).'),
  query: z
    .string()
    .optional()
    .describe(
      'Case-insensitive fragment of the file name; several words must all match; a word with / matches the path.',
    ),
  glob: z.string().optional().describe('Glob on the name ("*.md") or, with a /, on the path ("src/**/*.test.ts").'),
  type: z
    .string()
    .optional()
    .describe('"file" (default) or "dir" for directories, or a file type such as ts, py, md, json.'),
  sort: z
    .enum(['name', 'mtime', 'path', 'modified'])
    .optional()
    .describe('name: by path (default). mtime: most recently modified first.'),
  head_limit: z
    .number()
    .int()
    .min(0)
    .max(5000)
    .optional()
    .describe(`Maximum paths to return (default ${DEFAULT_FIND_HEAD_LIMIT}, 0 = all).`),
  offset: z.number().int().min(0).optional().describe('Skip this many results first (for paging).'),
});

interface Found {
  entry: WalkEntry;
  display: string;
}

// Modification times were taken by the walk, through each entry's opened parent.
const newestFirst = (found: Found[]): Found[] =>
  [...found].sort((a, b) => (b.entry.mtimeMs ?? 0) - (a.entry.mtimeMs ?? 0) || (a.display < b.display ? -1 : 1));

const byRelative = (a: Found, b: Found): number =>
  a.entry.relative < b.entry.relative ? -1 : a.entry.relative > b.entry.relative ? 1 : 0;

export function createFindFilesTool(options: FindFilesToolOptions) {
  return defineTool({
    name: 'find_files',
    description:
      'Find files by name fragment (query), glob or type; type "dir" finds directories. Honours .gitignore ' +
      'and skips .git and node_modules. Returns workspace-relative paths. Use it to locate files before ' +
      'read_file instead of listing directories one by one.',
    parameters,
    concurrencySafe: true,
    async execute(args, ctx): Promise<ToolResult> {
      const target = await resolveSearchRoot(options.policy, args.path);
      if (typeof target === 'string') return fail(target);
      const type = args.type?.trim().toLowerCase();
      const wantDirs = type === 'dir' || type === 'directory';
      const matchesType = wantDirs || type === 'file' ? undefined : fileTypeMatcher(type);
      const matchesGlob = globMatcher(args.glob);
      const matchesQuery = queryMatcher(args.query);

      const byMtime = args.sort === 'mtime' || args.sort === 'modified';
      const walked: WalkState = { truncated: false };
      let found: Found[] = [];
      try {
        const options = { includeDirs: wantDirs, withMtime: byMtime, signal: ctx.signal };
        for await (const batch of walkSearchRoot(target, options, walked)) {
          for (const entry of batch) {
            if (entry.isDir !== wantDirs) continue;
            const display = target.display(entry.relative);
            if (matchesType && !matchesType(entry.name)) continue;
            if (matchesGlob && !matchesGlob(entry.name, entry.relative, display)) continue;
            if (matchesQuery && !matchesQuery(entry.name, display)) continue;
            found.push({ entry, display });
          }
        }
      } catch (error) {
        return fail(searchFailure(error));
      }
      found = byMtime ? newestFirst(found) : found.sort(byRelative);

      const partial = walked.truncated
        ? '\n(the tree is very large and was only partly searched; give a narrower path)'
        : '';
      const kind = wantDirs ? 'directories' : 'files';
      if (found.length === 0) return ok(`No ${kind} found.${partial}`);
      const offset = args.offset ?? 0;
      const limit = args.head_limit ?? DEFAULT_FIND_HEAD_LIMIT;
      const page = found.slice(offset, limit === 0 ? undefined : offset + limit);
      if (page.length === 0) return ok(`No results at offset ${offset} (only ${found.length} ${kind}).`);
      const lines = page.map((item) => (item.entry.isDir ? `${item.display}/` : item.display));
      const more = found.length > offset + page.length;
      return ok(`${lines.join('\n')}${pagingNote(offset, page.length, more, kind)}${partial}`);
    },
  });
}
