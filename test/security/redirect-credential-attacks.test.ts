/**
 * A redirect to another origin must not carry credentials, whatever header they travel in. The policy fetch dropped
 * only Authorization, Cookie and Proxy-Authorization, so a search provider's own key header (Brave's
 * X-Subscription-Token, Serper's X-API-KEY, …) or an MCP server's configured header went on to whatever host a
 * redirect named. Each web_search provider is driven with its real request builder against a loopback fake that
 * redirects to a second origin, with every redirect status; the second origin must never see the key.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createNetworkPolicy } from '../../src/security/network.js';
import { SEARCH_PROVIDERS } from '../../src/tools/web/search-providers.js';
import { type FakeWeb, redirect, startFakeWeb } from '../helpers/fake-web.js';

const KEY = 'KEY-redirect-9c41';
const STATUSES = [301, 302, 303, 307, 308];
const servers: FakeWeb[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function pair(path: string, status: number): Promise<{ first: FakeWeb; other: FakeWeb }> {
  const other = await startFakeWeb({ routes: { '/land': { body: '{}' } } });
  const first = await startFakeWeb({ routes: { [path]: redirect(other.url('/land'), status) } });
  servers.push(first, other);
  return { first, other };
}

const seen = (web: FakeWeb): string => JSON.stringify(web.requests.map((request) => request.headers));
const policy = () => createNetworkPolicy({ whitelist: ['127.0.0.1/32'] });

const keyed = Object.values(SEARCH_PROVIDERS).filter((provider) => provider.needs === 'apiKey');

describe('a cross-origin redirect carries no credential header', () => {
  it('covers every keyed search provider', () => {
    expect(keyed.length).toBeGreaterThanOrEqual(5);
  });

  it.each(keyed.flatMap((provider) => STATUSES.map((status) => [provider.name, status] as const)))(
    'web_search %s, redirect %i: the key reaches the provider only',
    async (name, status) => {
      const provider = SEARCH_PROVIDERS[name];
      if (!provider) throw new Error(name);
      const { first, other } = await pair('/unused', status);
      const request = provider.buildRequest({ query: 'q', count: 3, apiKey: KEY, baseUrl: first.origin });
      first.route(new URL(request.url).pathname, redirect(other.url('/land'), status));
      const response = await policy().fetch(request.url, {
        method: request.method,
        headers: request.headers,
        ...(request.body !== undefined ? { body: request.body } : {}),
      });
      await response.text();
      expect(seen(first)).toContain(KEY);
      expect(other.requests).toHaveLength(1);
      expect(seen(other)).not.toContain(KEY);
    },
  );

  const CUSTOM = ['X-Api-Key', 'Api-Key', 'X-Auth-Token', 'X-Goog-Api-Key', 'Private-Token', 'X-Custom-Secret'];
  it.each(CUSTOM)('a configured %s header stays with its origin', async (header) => {
    const { first, other } = await pair('/mcp', 307);
    await policy().fetch(first.url('/mcp'), { method: 'POST', body: '{}', headers: { [header]: KEY } });
    expect(seen(first)).toContain(KEY);
    expect(seen(other)).not.toContain(KEY);
  });

  it('a same-origin redirect keeps the headers; another origin still gets Accept and User-Agent', async () => {
    const other = await startFakeWeb({ routes: { '/land': { body: 'ok' } } });
    const first = await startFakeWeb({
      routes: { '/a': redirect('/b'), '/b': redirect(other.url('/land')) },
    });
    servers.push(first, other);
    await policy().fetch(first.url('/a'), { headers: { 'X-Api-Key': KEY, Accept: 'text/html', 'User-Agent': 'nb' } });
    expect(first.requests.map((r) => r.headers['x-api-key'])).toEqual([KEY, KEY]);
    expect(other.requests[0]?.headers.accept).toBe('text/html');
    expect(other.requests[0]?.headers['user-agent']).toBe('nb');
    expect(other.requests[0]?.headers['x-api-key']).toBeUndefined();
  });
});
