/**
 * grep: regex (or literal) search over file contents, with nanobot's parameters. Files are visited in
 * sorted path order (deterministic output) and read in time slices; once the requested page of results
 * is known the search stops, so `files_with_matches` on a large tree returns as soon as enough matched.
 */
import { z } from 'zod';
import { RegexTimeoutError } from '../../security/bounded-regex.js';
import type { PathPolicy } from '../../security/workspace.js';
import { defineTool, fail, ok, type ToolResult } from '../types.js';
import { fileTypeMatcher } from './file-types.js';
import { compileGrepPattern } from './grep-pattern.js';
import { MAX_GREP_FILE_BYTES, type MatchHit, scanFile } from './grep-scan.js';
import { globMatcher, pagingNote, resolveSearchRoot, searchFailure, TimeSlicer } from './search-common.js';
import { type WalkState, walkSearchRoot } from './walk.js';

export const DEFAULT_GREP_HEAD_LIMIT = 250;
const MAX_CONTEXT_LINES = 20;

export interface GrepToolOptions {
  policy: PathPolicy;
}

const parameters = z.object({
  pattern: z.string().min(1).describe('Regular expression (JavaScript syntax) or, with fixed_strings, literal text.'),
  path: z.string().optional().describe('File or directory to search (default: the workspace).'),
  glob: z.string().optional().describe('Only files matching this glob, e.g. "*.ts" or "src/**/*.test.ts".'),
  type: z.string().optional().describe('Only files of this type: ts, js, py, md, json, go, rust, java, sh, yaml...'),
  case_insensitive: z.boolean().optional().describe('Ignore case (default false).'),
  fixed_strings: z.boolean().optional().describe('Treat pattern as literal text, not a regex (default false).'),
  output_mode: z
    .enum(['content', 'files_with_matches', 'count'])
    .optional()
    .describe('files_with_matches (default): matching paths. content: matching lines. count: matches per file.'),
  context_before: z.number().int().min(0).max(MAX_CONTEXT_LINES).optional().describe('content mode: lines before.'),
  context_after: z.number().int().min(0).max(MAX_CONTEXT_LINES).optional().describe('content mode: lines after.'),
  head_limit: z
    .number()
    .int()
    .min(0)
    .max(5000)
    .optional()
    .describe(`Maximum results (lines in content mode, files otherwise; default ${DEFAULT_GREP_HEAD_LIMIT}, 0 = all).`),
  offset: z.number().int().min(0).optional().describe('Skip this many results first (for paging).'),
});

type GrepArgs = z.infer<typeof parameters>;
type OutputMode = NonNullable<GrepArgs['output_mode']>;

interface FileResult {
  display: string;
  matchCount: number;
  hits: MatchHit[];
}

/**
 * `path:12: text` for matches and `path-11- text` for context lines. With context, `--` separates groups
 * that are not adjacent (as ripgrep does); overlapping context is printed once.
 */
function renderContent(
  files: FileResult[],
  offset: number,
  limit: number,
  withContext: boolean,
): { text: string; shown: number } {
  const out: string[] = [];
  let seen = 0;
  let shown = 0;
  for (const file of files) {
    let lastLine = 0;
    for (const hit of file.hits) {
      if (seen++ < offset) continue;
      if (shown >= limit) return { text: out.join('\n'), shown };
      shown++;
      const lines = [...hit.before, hit, ...hit.after].filter((line) => line.line > lastLine);
      const adjacent = lastLine > 0 && (lines[0]?.line ?? 0) === lastLine + 1;
      if (withContext && out.length > 0 && !adjacent) out.push('--');
      for (const line of lines) {
        const separator = line === hit ? ':' : '-';
        out.push(`${file.display}${separator}${line.line}${separator} ${line.text}`);
      }
      lastLine = Math.max(lastLine, lines.at(-1)?.line ?? 0);
    }
  }
  return { text: out.join('\n'), shown };
}

/** Results a page needs: the requested ones plus one more, to know whether another page exists. */
const wanted = (offset: number, limit: number): number => (limit === 0 ? Number.POSITIVE_INFINITY : offset + limit + 1);

export function createGrepTool(options: GrepToolOptions) {
  return defineTool({
    name: 'grep',
    description:
      'Search file contents with a regular expression (or literal text with fixed_strings). Honours ' +
      '.gitignore and skips .git, node_modules, binary files and files over 2 MB. output_mode: ' +
      'files_with_matches (default), content (`path:line: text`, with optional context lines) or count. ' +
      'Filter with glob or type; page with head_limit and offset. Prefer this over running grep in exec.',
    parameters,
    concurrencySafe: true,
    async execute(args, ctx): Promise<ToolResult> {
      const compiled = compileGrepPattern(args.pattern, {
        caseInsensitive: args.case_insensitive,
        fixedStrings: args.fixed_strings,
      });
      if (typeof compiled === 'string') return fail(compiled);
      const target = await resolveSearchRoot(options.policy, args.path);
      if (typeof target === 'string') return fail(target);

      const mode: OutputMode = args.output_mode ?? 'files_with_matches';
      const offset = args.offset ?? 0;
      const limit = args.head_limit ?? DEFAULT_GREP_HEAD_LIMIT;
      const need = wanted(offset, limit);
      const matchesGlob = globMatcher(args.glob);
      const matchesType = fileTypeMatcher(args.type);

      const results: FileResult[] = [];
      let found = 0;
      let skippedLarge = 0;
      const scanOptions = {
        pattern: compiled,
        maxHits: mode === 'content' ? need : 0,
        firstMatchOnly: mode === 'files_with_matches',
        contextBefore: args.context_before ?? 0,
        contextAfter: args.context_after ?? 0,
      };
      // Sorted order, stopping once the page (plus one result, to know if there is more) is filled.
      const slicer = new TimeSlicer(ctx.signal);
      const walked: WalkState = { truncated: false };
      try {
        search: for await (const batch of walkSearchRoot(target, { signal: ctx.signal }, walked)) {
          for (const entry of batch) {
            if (found >= need) break search;
            if (matchesGlob && !matchesGlob(entry.name, entry.relative, target.display(entry.relative))) continue;
            if (matchesType && !matchesType(entry.name)) continue;
            await slicer.tick();
            const scan = scanFile(entry.open, scanOptions);
            if (scan.kind === 'skipped') {
              if (scan.reason === 'large') skippedLarge++;
              continue;
            }
            if (scan.matchCount === 0) continue;
            const display = target.display(entry.relative);
            results.push({ display, matchCount: scan.matchCount, hits: scan.hits });
            found += mode === 'content' ? scan.hits.length : 1;
          }
        }
      } catch (error) {
        if (error instanceof RegexTimeoutError) return fail(`Error: ${error.message}`);
        return fail(searchFailure(error));
      }

      const notes: string[] = [];
      if (skippedLarge > 0) notes.push(`${skippedLarge} file(s) over ${MAX_GREP_FILE_BYTES / 1024 / 1024} MB skipped`);
      if (walked.truncated) notes.push('the tree is very large and was only partly searched; give a narrower path');
      const noteText = notes.length > 0 ? `\n(${notes.join('; ')})` : '';
      const where = args.path?.trim() ? args.path : 'the workspace';
      if (results.length === 0) return ok(`No matches for ${JSON.stringify(args.pattern)} in ${where}.${noteText}`);

      const pageLimit = limit === 0 ? Number.POSITIVE_INFINITY : limit;
      if (mode === 'content') {
        const withContext = scanOptions.contextBefore + scanOptions.contextAfter > 0;
        const { text, shown } = renderContent(results, offset, pageLimit, withContext);
        if (shown === 0) return ok(`No results at offset ${offset} (only ${found} matching lines).${noteText}`);
        return ok(text + pagingNote(offset, shown, found > offset + shown, 'matching lines') + noteText);
      }
      const page = results.slice(offset, offset + pageLimit);
      if (page.length === 0) return ok(`No results at offset ${offset} (only ${results.length} files).${noteText}`);
      const lines = page.map((file) => (mode === 'count' ? `${file.display}:${file.matchCount}` : file.display));
      return ok(
        lines.join('\n') + pagingNote(offset, page.length, results.length > offset + page.length, 'files') + noteText,
      );
    },
  });
}
