/**
 * edit_file: replace text in a file. Exact match first, then indentation-insensitive, then quote-insensitive
 * (see edit-match.ts). Ambiguity is an error that lists the candidate lines; a no-op edit is an error (a
 * model once looped on one for 23 minutes); CRLF line endings and a BOM are kept; writes are atomic.
 */
import { z } from 'zod';
import type { PathPolicy } from '../../security/workspace.js';
import { defineTool, fail, ok, type ToolResult } from '../types.js';
import { readContained, writeFileContained } from './contained-write.js';
import { applyMatches, findMatches, type MatchStrategy, notFoundMessage, type TextMatch } from './edit-match.js';

export interface EditFileToolOptions {
  policy: PathPolicy;
}

const parameters = z.object({
  path: z.string().describe('File to edit: relative to the workspace, absolute, or starting with ~.'),
  old_text: z
    .string()
    .describe('Text to find. Include enough surrounding lines to make it unique. "" creates a new file.'),
  new_text: z.string().describe('Replacement text.'),
  replace_all: z.boolean().optional().describe('Replace every occurrence instead of requiring a unique match.'),
  occurrence: z.number().int().min(1).optional().describe('Replace only the Nth occurrence (1-based).'),
  line_hint: z.number().int().min(1).optional().describe('Replace the occurrence nearest to this line number.'),
  expected_replacements: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('Fail unless exactly this many occurrences are found; all of them are replaced.'),
});

type EditArgs = z.infer<typeof parameters>;

const STRATEGY_NOTE: Record<MatchStrategy, string> = {
  exact: '',
  whitespace: ' (matched ignoring indentation/whitespace)',
  quotes: ' (matched ignoring curly vs straight quotes)',
  'quotes+whitespace': ' (matched ignoring whitespace and quote style)',
};

const toLf = (text: string): string => text.replace(/\r\n/g, '\n');

/** Picks which matches to replace, or explains why the choice is ambiguous or impossible. */
function selectMatches(matches: TextMatch[], args: EditArgs): TextMatch[] | string {
  const lines = matches.map((match) => match.line).join(', ');
  if (args.expected_replacements !== undefined && matches.length !== args.expected_replacements) {
    return `expected ${args.expected_replacements} occurrence(s) of old_text but found ${matches.length} (lines ${lines}).`;
  }
  if (args.replace_all || args.expected_replacements !== undefined) return matches;
  if (args.occurrence !== undefined) {
    const chosen = matches[args.occurrence - 1];
    if (!chosen)
      return `occurrence ${args.occurrence} requested but old_text occurs ${matches.length} time(s) (lines ${lines}).`;
    return [chosen];
  }
  if (args.line_hint !== undefined) {
    const hint = args.line_hint;
    const nearest = matches.reduce((best, match) =>
      Math.abs(match.line - hint) < Math.abs(best.line - hint) ? match : best,
    );
    return [nearest];
  }
  if (matches.length > 1) {
    return (
      `old_text matches ${matches.length} locations (lines ${lines}). Include more surrounding context to make ` +
      'it unique, or set replace_all, occurrence or line_hint.'
    );
  }
  return matches;
}

/** A few lines around the first replacement, so the model can check the result without re-reading. */
function snippetAround(content: string, firstLine: number, replacement: string): string {
  const all = content.split('\n');
  const from = Math.max(1, firstLine - 2);
  const to = Math.min(all.length, firstLine + replacement.split('\n').length + 1, from + 14);
  return all
    .slice(from - 1, to)
    .map((line, i) => `${from + i}| ${line}`)
    .join('\n');
}

async function createFile(policy: PathPolicy, file: string, args: EditArgs): Promise<ToolResult> {
  const existing = (await readContained(policy, file))?.toString('utf8');
  if (existing !== undefined && existing.trim() !== '') {
    return fail(
      `${args.path} already exists and is not empty. Give old_text to edit it, or use write_file to replace it.`,
    );
  }
  await writeFileContained(policy, file, args.new_text);
  return ok(`Created ${args.path} (${Buffer.byteLength(args.new_text, 'utf8')} bytes).`);
}

export function createEditFileTool(options: EditFileToolOptions) {
  return defineTool({
    name: 'edit_file',
    description:
      'Replace old_text with new_text in a file. old_text must match exactly once unless replace_all, ' +
      'occurrence or line_hint says which; small whitespace or quote differences are tolerated. ' +
      'Use old_text "" to create a new file.',
    parameters,
    async execute(args): Promise<ToolResult> {
      const resolved = options.policy.resolve(args.path, 'write');
      if (!resolved.ok) return fail(resolved.error);
      const file = resolved.path;
      if (args.old_text === args.new_text) {
        return fail('old_text and new_text are identical, so this edit would change nothing. Do not repeat it.');
      }
      try {
        if (args.old_text === '') return await createFile(options.policy, file, args);
        const raw = (await readContained(options.policy, file))?.toString('utf8');
        if (raw === undefined) {
          return fail(`File not found: ${args.path}. To create it, use write_file or edit_file with old_text "".`);
        }
        const bom = raw.startsWith('\uFEFF') ? '\uFEFF' : '';
        const crlf = raw.includes('\r\n');
        const content = toLf(raw.slice(bom.length));

        const found = findMatches(content, toLf(args.old_text), toLf(args.new_text));
        if (!found) return fail(notFoundMessage(args.path, content, toLf(args.old_text)));
        const chosen = selectMatches(found.matches, args);
        if (typeof chosen === 'string') return fail(chosen);

        const updated = applyMatches(content, chosen);
        if (updated === content) {
          return fail('The edit would leave the file unchanged (new_text equals the matched text). Do not repeat it.');
        }
        await writeFileContained(options.policy, file, bom + (crlf ? updated.replace(/\n/g, '\r\n') : updated));

        const first = chosen.reduce((a, b) => (a.start < b.start ? a : b));
        const at = chosen.length === 1 ? `at line ${first.line}` : `at lines ${chosen.map((m) => m.line).join(', ')}`;
        const count = chosen.length === 1 ? '1 occurrence' : `${chosen.length} occurrences`;
        // Nothing before the earliest match changed, so its line number still holds in the new text.
        return ok(
          `Edited ${args.path}: replaced ${count} ${at}${STRATEGY_NOTE[found.strategy]}.\n` +
            snippetAround(updated, first.line, first.replacement),
        );
      } catch (error) {
        return fail(`Could not edit ${args.path}: ${error instanceof Error ? error.message : String(error)}`);
      }
    },
  });
}
