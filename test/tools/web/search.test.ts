import { afterEach, describe, expect, it } from 'vitest';
import { createNetworkPolicy } from '../../../src/security/network.js';
import { createWebSearchTool, type WebSearchToolOptions } from '../../../src/tools/web/search.js';
import {
  duckDuckGoResultsHtml,
  type FakeRoute,
  type FakeWeb,
  html,
  json,
  startFakeWeb,
} from '../../helpers/fake-web.js';
import { makeContext, textOf } from '../helpers.js';

const servers: FakeWeb[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function fake(routes: Record<string, FakeRoute> = {}): Promise<FakeWeb> {
  const server = await startFakeWeb({ routes });
  servers.push(server);
  return server;
}

const loopback = () => createNetworkPolicy({ whitelist: ['127.0.0.1/32'] });

async function search(options: Omit<WebSearchToolOptions, 'network'>, query = 'node event loop', count?: number) {
  const tool = createWebSearchTool({ network: loopback(), env: {}, ...options });
  return tool.execute({ query, ...(count ? { count } : {}) }, makeContext());
}

/** Checks the output shape: header, one untrusted fence, numbered entries. */
function resultsOf(output: string): string {
  const match =
    /<<<UNTRUSTED_CONTENT nonce=([0-9a-f]{16}) source=web_search \w+>>>\n([\s\S]*)\n<<<END_UNTRUSTED_CONTENT nonce=\1>>>$/.exec(
      output,
    );
  if (!match?.[2]) throw new Error(`no untrusted fence in: ${output}`);
  return match[2];
}

const DDG_RESULTS = [
  {
    title: 'The Node.js Event Loop',
    url: 'https://nodejs.org/en/learn/event-loop',
    snippet: 'The <b>event loop</b> is what allows Node.js…',
  },
  { title: 'Event loop &amp; timers', url: 'https://example.com/a?x=1&y=2', snippet: 'Timers, microtasks and more' },
];

describe('web_search: duckduckgo (keyless default)', () => {
  it('posts the query to the HTML endpoint and lists organic results without the ad', async () => {
    const ddg = await fake({ '/html/': html(duckDuckGoResultsHtml(DDG_RESULTS)) });
    const result = await search({ search: { provider: 'duckduckgo', baseUrl: ddg.origin } });
    expect(result.isError).toBeFalsy();
    expect(ddg.requests[0]?.method).toBe('POST');
    expect(new URLSearchParams(ddg.requests[0]?.body).get('q')).toBe('node event loop');
    const output = textOf(result);
    expect(output.split('\n')[0]).toBe('Search results for "node event loop" (DuckDuckGo, 2 results):');
    expect(resultsOf(output)).toBe(
      [
        '1. The Node.js Event Loop',
        '   https://nodejs.org/en/learn/event-loop',
        '   The event loop is what allows Node.js…',
        '2. Event loop & timers',
        '   https://example.com/a?x=1&y=2',
        '   Timers, microtasks and more',
      ].join('\n'),
    );
    expect(output).not.toContain('Sponsored');
  });

  it('reports a bot check instead of claiming there are no results', async () => {
    const ddg = await fake({
      '/html/': html(
        '<html><body><div class="anomaly-modal">Unfortunately, bots use DuckDuckGo too.</div></body></html>',
        202,
      ),
    });
    const result = await search({ search: { baseUrl: ddg.origin } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('bot check');
  });

  it('says when there are no results', async () => {
    const ddg = await fake({ '/html/': html(duckDuckGoResultsHtml([])) });
    const result = await search({ search: { baseUrl: ddg.origin } }, 'zxqv nothing');
    expect(textOf(result)).toBe('No results for "zxqv nothing" (DuckDuckGo).');
  });
});

describe('web_search: API providers', () => {
  it('brave: GET with X-Subscription-Token, q and count', async () => {
    const brave = await fake({
      '/res/v1/web/search': json({
        web: {
          results: [{ title: 'Brave <strong>hit</strong>', url: 'https://b.example/', description: 'It&#x27;s good' }],
        },
      }),
    });
    const result = await search(
      { search: { provider: 'brave', apiKey: 'brave-key', baseUrl: brave.origin } },
      'rust async',
      3,
    );
    const request = brave.requests[0];
    expect(request?.method).toBe('GET');
    expect(request?.url.searchParams.get('q')).toBe('rust async');
    expect(request?.url.searchParams.get('count')).toBe('3');
    expect(request?.headers['x-subscription-token']).toBe('brave-key');
    expect(resultsOf(textOf(result))).toBe("1. Brave hit\n   https://b.example/\n   It's good");
  });

  it('brave: takes the key from BRAVE_API_KEY and accepts a full endpoint as baseUrl', async () => {
    const brave = await fake({
      '/res/v1/web/search': json({ web: { results: [{ title: 'T', url: 'https://t.example/' }] } }),
    });
    const result = await search({
      search: { provider: 'brave', baseUrl: brave.url('/res/v1/web/search') },
      env: { BRAVE_API_KEY: 'from-env' },
    });
    expect(brave.requests[0]?.headers['x-subscription-token']).toBe('from-env');
    expect(resultsOf(textOf(result))).toBe('1. T\n   https://t.example/');
  });

  it('tavily: POST JSON with a bearer key', async () => {
    const tavily = await fake({
      '/search': json({ results: [{ title: 'Tavily hit', url: 'https://t.example/x', content: 'summary text' }] }),
    });
    const result = await search({ search: { provider: 'tavily', apiKey: 'tvly-1', baseUrl: tavily.origin } }, 'q1', 4);
    const request = tavily.requests[0];
    expect(request?.method).toBe('POST');
    expect(request?.headers.authorization).toBe('Bearer tvly-1');
    expect(JSON.parse(request?.body ?? '')).toEqual({ query: 'q1', max_results: 4 });
    expect(resultsOf(textOf(result))).toBe('1. Tavily hit\n   https://t.example/x\n   summary text');
  });

  it('searxng: GET /search?format=json on the base URL from SEARXNG_BASE_URL', async () => {
    const searx = await fake({
      '/search': json({ results: [{ title: 'Searx hit', url: 'https://s.example/', content: 'from searx' }] }),
    });
    const result = await search({ search: { provider: 'searxng' }, env: { SEARXNG_BASE_URL: searx.origin } }, 'q2');
    expect(searx.requests[0]?.url.searchParams.get('q')).toBe('q2');
    expect(searx.requests[0]?.url.searchParams.get('format')).toBe('json');
    expect(resultsOf(textOf(result))).toBe('1. Searx hit\n   https://s.example/\n   from searx');
  });

  it('serper: POST with X-API-KEY, reads organic links', async () => {
    const serper = await fake({
      '/search': json({ organic: [{ title: 'Google hit', link: 'https://g.example/', snippet: 'snip' }] }),
    });
    const result = await search({ search: { provider: 'serper', apiKey: 'sk', baseUrl: serper.origin } }, 'q3', 2);
    expect(serper.requests[0]?.headers['x-api-key']).toBe('sk');
    expect(JSON.parse(serper.requests[0]?.body ?? '')).toEqual({ q: 'q3', num: 2 });
    expect(resultsOf(textOf(result))).toBe('1. Google hit\n   https://g.example/\n   snip');
  });

  it('exa: POST with x-api-key, snippet from highlights', async () => {
    const exa = await fake({
      '/search': json({ results: [{ title: 'Exa hit', url: 'https://e.example/', highlights: ['first', 'second'] }] }),
    });
    const result = await search({ search: { provider: 'exa', apiKey: 'ek', baseUrl: exa.origin } }, 'q4');
    expect(exa.requests[0]?.headers['x-api-key']).toBe('ek');
    expect(JSON.parse(exa.requests[0]?.body ?? '')).toMatchObject({ query: 'q4', numResults: 5 });
    expect(resultsOf(textOf(result))).toBe('1. Exa hit\n   https://e.example/\n   first … second');
  });

  it('jina: GET /<query> with a bearer key', async () => {
    const jina = await fake({
      '/what%20is%20nanobot': json({ data: [{ title: 'Jina hit', url: 'https://j.example/', description: 'desc' }] }),
    });
    const result = await search(
      { search: { provider: 'jina', apiKey: 'jk', baseUrl: jina.origin } },
      'what is nanobot',
    );
    expect(jina.requests[0]?.headers.authorization).toBe('Bearer jk');
    expect(resultsOf(textOf(result))).toBe('1. Jina hit\n   https://j.example/\n   desc');
  });

  it('kagi: POST with a bearer key', async () => {
    const kagi = await fake({
      '/api/v1/search': json({ data: { search: [{ title: 'Kagi hit', url: 'https://k.example/', snippet: 'ks' }] } }),
    });
    const result = await search({ search: { provider: 'kagi', apiKey: 'kk', baseUrl: kagi.origin } }, 'q5', 2);
    expect(kagi.requests[0]?.headers.authorization).toBe('Bearer kk');
    expect(JSON.parse(kagi.requests[0]?.body ?? '')).toEqual({ query: 'q5', limit: 2 });
    expect(resultsOf(textOf(result))).toBe('1. Kagi hit\n   https://k.example/\n   ks');
  });

  it('caps the list at count (default from maxResults)', async () => {
    const many = Array.from({ length: 8 }, (_, i) => ({ title: `R${i}`, url: `https://r.example/${i}`, content: '' }));
    const tavily = await fake({ '/search': json({ results: many }) });
    const result = await search({ search: { provider: 'tavily', apiKey: 'k', baseUrl: tavily.origin, maxResults: 3 } });
    expect(JSON.parse(tavily.requests[0]?.body ?? '').max_results).toBe(3);
    expect(resultsOf(textOf(result)).match(/^\d+\. /gm)).toEqual(['1. ', '2. ', '3. ']);
  });

  it('reports an auth failure with a hint about the key', async () => {
    const brave = await fake({ '/res/v1/web/search': json({ error: 'bad key' }, 401) });
    const result = await search({ search: { provider: 'brave', apiKey: 'wrong', baseUrl: brave.origin } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('Error: Brave search failed: HTTP 401 Unauthorized (check the API key)');
  });
});

describe('web_search: fallback and guard', () => {
  it.each([
    ['brave', 'BRAVE_API_KEY'],
    ['tavily', 'TAVILY_API_KEY'],
    ['searxng', 'SEARXNG_BASE_URL'],
  ])('falls back to DuckDuckGo with a note when %s has no %s', async (provider, envVar) => {
    const ddg = await fake({ '/html/': html(duckDuckGoResultsHtml(DDG_RESULTS)) });
    const result = await search({ search: { provider }, endpointOverrides: { duckduckgo: ddg.origin } });
    const output = textOf(result);
    expect(output.split('\n')[0]).toContain(`Note: search provider '${provider}' has no`);
    expect(output.split('\n')[0]).toContain(envVar);
    expect(output).toContain('(DuckDuckGo, 2 results)');
    expect(ddg.requests).toHaveLength(1);
  });

  it('rejects an unknown provider', async () => {
    const result = await search({ search: { provider: 'altavista' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("unknown search provider 'altavista'");
  });

  it('sends provider requests through the network policy', async () => {
    const searx = await fake({ '/search': json({ results: [] }) });
    const tool = createWebSearchTool({
      network: createNetworkPolicy(),
      search: { provider: 'searxng', baseUrl: searx.origin },
    });
    const result = await tool.execute({ query: 'x' }, makeContext());
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('127.0.0.1 is loopback');
    expect(searx.connections()).toBe(0);
  });
});
