/**
 * The search back-ends web_search can use: how to ask each one and how to read its answer. Request shapes follow
 * nanobot's, so the same keys and base URLs work. DuckDuckGo (keyless) scrapes the HTML endpoint.
 */

/** Thrown when DuckDuckGo answers with its bot check instead of results. */
export class DuckDuckGoBlockedError extends Error {
  constructor() {
    super(
      'DuckDuckGo answered with a bot check instead of results; try again later or configure a search provider with an API key',
    );
  }
}

export interface SearchHit {
  title: string;
  url: string;
  snippet: string;
}

export interface ProviderRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

export interface SearchQuery {
  query: string;
  count: number;
  /** API key, or for searxng nothing (it needs a base URL instead). */
  apiKey?: string;
  /** Base URL (from config or default) the provider's path is added to. */
  baseUrl: string;
}

export interface SearchProvider {
  readonly name: string;
  readonly label: string;
  /** What must be configured: an API key, a base URL (self-hosted), or nothing. */
  readonly needs: 'apiKey' | 'baseUrl' | 'nothing';
  /** Environment variable holding the key (or the base URL for searxng). */
  readonly envVar?: string;
  readonly defaultBaseUrl?: string;
  readonly path: string;
  buildRequest(query: SearchQuery): ProviderRequest;
  /** Reads the response body; throws when it is not the expected shape. */
  parse(body: string): SearchHit[] | Promise<SearchHit[]>;
}

type JsonRecord = Record<string, unknown>;

const asRecord = (value: unknown): JsonRecord =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonRecord) : {};
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const asString = (value: unknown): string => (typeof value === 'string' ? value : '');

function parseJson(body: string): JsonRecord {
  const parsed: unknown = JSON.parse(body);
  if (typeof parsed !== 'object' || parsed === null) throw new Error('the response is not a JSON object');
  return parsed as JsonRecord;
}

/** Maps an array of result objects to hits, reading the title/url/snippet from the named fields. */
function hitsFrom(items: unknown, fields: { title: string; url: string; snippet: string[] }): SearchHit[] {
  return asArray(items).map((item) => {
    const record = asRecord(item);
    const snippet = fields.snippet.map((name) => asString(record[name])).find((text) => text.length > 0) ?? '';
    return { title: asString(record[fields.title]), url: asString(record[fields.url]), snippet };
  });
}

/** Base URL + provider path, unless the configured base already ends with that path (a full endpoint). */
export function endpointFor(baseUrl: string, path: string): string {
  const base = baseUrl.replace(/\/+$/, '');
  const trimmedPath = path.replace(/\/+$/, '');
  if (trimmedPath && new URL(base).pathname.replace(/\/+$/, '').endsWith(trimmedPath)) return base;
  return `${base}${path}`;
}

const json = (headers: Record<string, string>) => ({ Accept: 'application/json', ...headers });
const jsonBody = (headers: Record<string, string>) => ({ ...json(headers), 'Content-Type': 'application/json' });

const duckduckgo: SearchProvider = {
  name: 'duckduckgo',
  label: 'DuckDuckGo',
  needs: 'nothing',
  defaultBaseUrl: 'https://html.duckduckgo.com',
  path: '/html/',
  buildRequest: ({ query, baseUrl }) => ({
    // The HTML endpoint is what its own search form posts to.
    url: endpointFor(baseUrl, '/html/'),
    method: 'POST',
    headers: { Accept: 'text/html', 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ q: query, b: '' }).toString(),
  }),
  // The HTML parser (linkedom) loads on first use, so start-up does not pay for it.
  parse: async (body) => (await import('./duckduckgo.js')).parseDuckDuckGoHtml(body),
};

const brave: SearchProvider = {
  name: 'brave',
  label: 'Brave',
  needs: 'apiKey',
  envVar: 'BRAVE_API_KEY',
  defaultBaseUrl: 'https://api.search.brave.com',
  path: '/res/v1/web/search',
  buildRequest: ({ query, count, apiKey = '', baseUrl }) => ({
    url: `${endpointFor(baseUrl, '/res/v1/web/search')}?${new URLSearchParams({ q: query, count: String(count) })}`,
    method: 'GET',
    headers: json({ 'X-Subscription-Token': apiKey }),
  }),
  parse: (body) =>
    hitsFrom(asRecord(parseJson(body).web).results, { title: 'title', url: 'url', snippet: ['description'] }),
};

const tavily: SearchProvider = {
  name: 'tavily',
  label: 'Tavily',
  needs: 'apiKey',
  envVar: 'TAVILY_API_KEY',
  defaultBaseUrl: 'https://api.tavily.com',
  path: '/search',
  buildRequest: ({ query, count, apiKey = '', baseUrl }) => ({
    url: endpointFor(baseUrl, '/search'),
    method: 'POST',
    headers: jsonBody({ Authorization: `Bearer ${apiKey}` }),
    body: JSON.stringify({ query, max_results: count }),
  }),
  parse: (body) => hitsFrom(parseJson(body).results, { title: 'title', url: 'url', snippet: ['content'] }),
};

const searxng: SearchProvider = {
  name: 'searxng',
  label: 'SearXNG',
  needs: 'baseUrl',
  envVar: 'SEARXNG_BASE_URL',
  path: '/search',
  buildRequest: ({ query, baseUrl }) => ({
    url: `${endpointFor(baseUrl, '/search')}?${new URLSearchParams({ q: query, format: 'json' })}`,
    method: 'GET',
    headers: json({}),
  }),
  parse: (body) => hitsFrom(parseJson(body).results, { title: 'title', url: 'url', snippet: ['content'] }),
};

const jina: SearchProvider = {
  name: 'jina',
  label: 'Jina',
  needs: 'apiKey',
  envVar: 'JINA_API_KEY',
  defaultBaseUrl: 'https://s.jina.ai',
  path: '/',
  buildRequest: ({ query, apiKey = '', baseUrl }) => ({
    url: `${baseUrl.replace(/\/+$/, '')}/${encodeURIComponent(query)}`,
    method: 'GET',
    headers: json({ Authorization: `Bearer ${apiKey}` }),
  }),
  parse: (body) =>
    hitsFrom(parseJson(body).data, { title: 'title', url: 'url', snippet: ['description', 'content'] }).map((hit) => ({
      ...hit,
      snippet: hit.snippet.slice(0, 500),
    })),
};

const serper: SearchProvider = {
  name: 'serper',
  label: 'Serper',
  needs: 'apiKey',
  envVar: 'SERPER_API_KEY',
  defaultBaseUrl: 'https://google.serper.dev',
  path: '/search',
  buildRequest: ({ query, count, apiKey = '', baseUrl }) => ({
    url: endpointFor(baseUrl, '/search'),
    method: 'POST',
    headers: jsonBody({ 'X-API-KEY': apiKey }),
    body: JSON.stringify({ q: query, num: count }),
  }),
  parse: (body) => hitsFrom(parseJson(body).organic, { title: 'title', url: 'link', snippet: ['snippet'] }),
};

const exa: SearchProvider = {
  name: 'exa',
  label: 'Exa',
  needs: 'apiKey',
  envVar: 'EXA_API_KEY',
  defaultBaseUrl: 'https://api.exa.ai',
  path: '/search',
  buildRequest: ({ query, count, apiKey = '', baseUrl }) => ({
    url: endpointFor(baseUrl, '/search'),
    method: 'POST',
    headers: jsonBody({ 'x-api-key': apiKey }),
    body: JSON.stringify({ query, numResults: count, contents: { highlights: true } }),
  }),
  parse: (body) =>
    asArray(parseJson(body).results).map((item) => {
      const record = asRecord(item);
      const highlights = asArray(record.highlights).map(asString).filter(Boolean).join(' … ');
      const snippet = highlights || (asString(record.summary) || asString(record.text)).slice(0, 500);
      return { title: asString(record.title), url: asString(record.url), snippet };
    }),
};

const kagi: SearchProvider = {
  name: 'kagi',
  label: 'Kagi',
  needs: 'apiKey',
  envVar: 'KAGI_API_KEY',
  defaultBaseUrl: 'https://kagi.com',
  path: '/api/v1/search',
  buildRequest: ({ query, count, apiKey = '', baseUrl }) => ({
    url: endpointFor(baseUrl, '/api/v1/search'),
    method: 'POST',
    headers: jsonBody({ Authorization: `Bearer ${apiKey}` }),
    body: JSON.stringify({ query, limit: count }),
  }),
  parse: (body) => {
    const data = parseJson(body).data;
    // v1 answers `{data: {search: [...]}}`; v0 answered `{data: [{t: 0, ...}]}` with t=1 for related searches.
    const items = Array.isArray(data) ? data.filter((item) => asRecord(item).t === 0) : asRecord(data).search;
    return hitsFrom(items, { title: 'title', url: 'url', snippet: ['snippet'] });
  },
};

export const SEARCH_PROVIDERS: Readonly<Record<string, SearchProvider>> = {
  duckduckgo,
  brave,
  tavily,
  searxng,
  jina,
  serper,
  exa,
  kagi,
};
