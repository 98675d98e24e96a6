/**
 * search_history: finds and quotes earlier messages of the current session (every stored message, including
 * those consolidated out of the model's context long ago) and entries of memory/history.jsonl. This is what
 * makes consolidation lossless from the model's point of view: nothing said is ever out of reach. A quote of a
 * tool result (a fetched page, an MCP answer, command output) is third-party text whose own fence the quote may
 * cut off, so it is fenced again.
 */
import { z } from 'zod';
import type { HistoryStore } from '../memory/history.js';
import { messageText } from '../memory/tokens.js';
import { BoundedRegex, RegexBudget, RegexTimeoutError } from '../security/bounded-regex.js';
import { fenceUntrusted } from '../security/untrusted.js';
import { publicContent, stripRuntimeContext } from '../session/runtime-context.js';
import type { SessionStore } from '../session/types.js';
import { defineTool, fail, ok } from './types.js';

export interface SearchHistoryToolOptions {
  history: HistoryStore;
  sessions: SessionStore;
}

const DEFAULT_LIMIT = 20;
/** Characters quoted on each side of a match. */
const QUOTE_RADIUS = 200;
/** Messages up to this long are quoted whole. */
const WHOLE_QUOTE_CHARS = 500;

const parameters = z.object({
  query: z
    .string()
    .min(1)
    .describe(
      'Text to find (case-insensitive), or a regular expression written as /pattern/ (e.g. /deadline|due date/).',
    ),
  scope: z
    .enum(['session', 'history', 'all'])
    .optional()
    .describe('session: every message of this conversation; history: archived notes (history.jsonl); all (default).'),
  limit: z.number().int().min(1).max(100).optional().describe(`Maximum results (default ${DEFAULT_LIMIT}).`),
  offset: z.number().int().min(0).optional().describe('Skip this many results first (for paging).'),
});

interface Hit {
  label: string;
  quote: string;
}

export function createSearchHistoryTool(options: SearchHistoryToolOptions) {
  return defineTool({
    name: 'search_history',
    description:
      'Search earlier conversation: every message of this session (including ones no longer in your context) ' +
      'and the archived notes in memory/history.jsonl. Use it to quote exactly what was said before instead of ' +
      'guessing. Results are newest first, with the matching text.',
    parameters,
    concurrencySafe: true,
    async execute(args, ctx) {
      const matcher = compileQuery(args.query);
      if (typeof matcher === 'string') return fail(matcher);
      const scope = args.scope ?? 'all';
      const hits: Hit[] = [];
      try {
        if (scope !== 'history') {
          if (!ctx.sessionKey) {
            if (scope === 'session') return fail('this turn has no session to search; use scope "history"');
          } else {
            hits.push(...(await searchSession(options.sessions, ctx.sessionKey, matcher)));
          }
        }
        if (scope !== 'session') hits.push(...searchHistory(options.history, matcher));
      } catch (error) {
        if (error instanceof RegexTimeoutError) return fail(`Error: ${error.message}`);
        throw error;
      }
      return ok(renderHits(hits, args.query, args.offset ?? 0, args.limit ?? DEFAULT_LIMIT));
    },
  });
}

/**
 * `/pattern/flags` is a regex; anything else is literal text. Always case-insensitive. The pattern is the model's,
 * so it is matched within a time budget shared by the whole search (security/bounded-regex.ts).
 */
export function compileQuery(query: string, budget: RegexBudget = new RegexBudget()): BoundedRegex | string {
  const literal = /^\/(.+)\/([a-z]*)$/s.exec(query);
  if (!literal) return new BoundedRegex(query.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&'), 'giu', budget);
  const [, source = '', flags = ''] = literal;
  const extra = [...new Set(flags.replace(/[^imsu]/g, '').replace('i', ''))].join('');
  try {
    return new BoundedRegex(source, `gi${extra}`, budget);
  } catch (error) {
    return `invalid regular expression ${query}: ${error instanceof Error ? error.message : String(error)}`;
  }
}

async function searchSession(sessions: SessionStore, key: string, matcher: BoundedRegex): Promise<Hit[]> {
  const session = await sessions.load(key);
  const hits: Hit[] = [];
  for (let index = session.messages.length - 1; index >= 0; index--) {
    const message = session.messages[index];
    if (!message) continue;
    const { text } = messageText({ ...message, content: publicContent(message) });
    const searchable = message.role === 'user' ? stripRuntimeContext(text) : text;
    const quote = quoteMatch(searchable, matcher);
    if (quote === undefined) continue;
    const when = message.timestamp ? ` · ${message.timestamp.slice(0, 16).replace('T', ' ')}` : '';
    const archived = index < session.lastConsolidated ? ' · archived' : '';
    const label = `[session message #${index} · ${message.role}${when}${archived}]`;
    const shown = message.role === 'tool' ? fenceUntrusted(quote, `earlier tool result #${index}`) : quote;
    hits.push({ label, quote: shown });
  }
  return hits;
}

function searchHistory(history: HistoryStore, matcher: BoundedRegex): Hit[] {
  const hits: Hit[] = [];
  const entries = history.readAll();
  for (let index = entries.length - 1; index >= 0; index--) {
    const entry = entries[index];
    if (!entry) continue;
    const quote = quoteMatch(entry.content, matcher);
    if (quote === undefined) continue;
    const session = entry.session_key ? ` · session ${entry.session_key}` : '';
    hits.push({ label: `[history cursor ${entry.cursor} · ${entry.timestamp}${session}]`, quote });
  }
  return hits;
}

/** The text around the first match (whole when short), with a note of further matches; undefined if none. */
export function quoteMatch(text: string, matcher: BoundedRegex): string | undefined {
  const first = matcher.firstMatch(text, 99);
  if (!first) return undefined;
  const { more } = first;
  const note = more > 0 ? ` (+${more}${more === 99 ? '+' : ''} more match${more === 1 ? '' : 'es'} in this text)` : '';
  if (text.length <= WHOLE_QUOTE_CHARS) return `${text}${note}`;
  const start = Math.max(0, first.index - QUOTE_RADIUS);
  const end = Math.min(text.length, first.index + first.length + QUOTE_RADIUS);
  return `${start > 0 ? '…' : ''}${text.slice(start, end)}${end < text.length ? '…' : ''}${note}`;
}

function renderHits(hits: Hit[], query: string, offset: number, limit: number): string {
  if (hits.length === 0) return `No matches for ${JSON.stringify(query)}.`;
  const found = `${hits.length} match${hits.length === 1 ? '' : 'es'} for ${JSON.stringify(query)}`;
  const page = hits.slice(offset, offset + limit);
  if (page.length === 0) return `${found}; none at offset ${offset}.`;
  const shownTo = offset + page.length;
  const header = `${found} (showing ${offset + 1}–${shownTo}, newest first):`;
  const footer = shownTo < hits.length ? `\n\nMore results: call again with offset=${shownTo}.` : '';
  return `${header}\n\n${page.map((hit) => `${hit.label}\n${hit.quote}`).join('\n\n')}${footer}`;
}
