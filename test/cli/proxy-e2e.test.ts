/**
 * `providers.<name>.proxy` and `tools.web.proxy` in the built CLI: the model calls and web_fetch go through a loopback
 * proxy that records what passed. (The SSRF side, with a hostile model, is test/security/web-proxy-attacks.test.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { homeWith, lastToolResult } from '../e2e/harness.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { type RecordingProxy, startRecordingProxy } from '../helpers/recording-proxy.js';
import { editConfig, runCli } from './cli-helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fakeLLM(script: Parameters<typeof startFakeLLM>[0]): Promise<FakeLLM> {
  const fake = await startFakeLLM(script);
  cleanups.push(() => fake.close());
  return fake;
}

async function proxy(sites: Parameters<typeof startRecordingProxy>[0] = {}): Promise<RecordingProxy> {
  const p = await startRecordingProxy(sites);
  cleanups.push(() => p.close());
  return p;
}

const llmAuthority = (fake: FakeLLM) => new URL(fake.url).host;

describe.each([
  { wire: 'openai', provider: 'custom', apiBase: (url: string) => `${url}/v1` },
  { wire: 'anthropic', provider: 'anthropic', apiBase: (url: string) => url },
])('providers.$provider.proxy ($wire wire)', ({ provider, apiBase }) => {
  it('sends every model request through the proxy', async () => {
    const fake = await fakeLLM([{ text: 'hello through the proxy' }]);
    const p = await proxy();
    const { home } = homeWith(fake.url);
    editConfig(home, (c) => {
      c.agents.defaults.provider = provider;
      c.providers = { [provider]: { apiKey: 'test-key', apiBase: apiBase(fake.url), proxy: p.url } };
    });
    const result = await runCli(['agent', '-m', 'hi'], home);
    expect(result.stderr).not.toMatch(/Error/);
    expect(result.stdout.trim()).toBe('hello through the proxy');
    expect(fake.requests.length).toBeGreaterThan(0);
    expect(p.requests.map((r) => `${r.method} ${r.target}`)).toContain(`CONNECT ${llmAuthority(fake)}`);
  });
});

describe('proxies in nanobot agent -m', () => {
  it('web_fetch goes through tools.web.proxy, the model through its provider proxy', async () => {
    const p = await proxy({
      '203.0.113.7:80': (req, res) =>
        res.writeHead(200, { 'content-type': 'text/plain' }).end(`the answer is 42 (${req.headers.host})`),
    });
    const fake = await fakeLLM([
      { toolCalls: [{ name: 'web_fetch', arguments: { url: 'http://203.0.113.7/answer' } }] },
      { text: 'It says 42.' },
    ]);
    const { home } = homeWith(fake.url, { tools: { web: { proxy: p.url } } });
    editConfig(home, (c) => {
      (c.providers.custom as Record<string, unknown>).proxy = p.url;
    });
    const result = await runCli(['agent', '-m', 'what is the answer?'], home);
    expect(result.stdout.trim()).toBe('It says 42.');
    expect(lastToolResult(fake.requests[1])).toContain('the answer is 42 (203.0.113.7)');
    const seen = p.requests.map((r) => `${r.method} ${r.target}${r.path ?? ''}`);
    expect(seen).toContain('CONNECT 203.0.113.7:80/answer');
    expect(seen).toContain(`CONNECT ${llmAuthority(fake)}`);
  });

  it('without a proxy configured, nothing goes through one', async () => {
    const fake = await fakeLLM([{ text: 'direct' }]);
    const p = await proxy();
    const { home } = homeWith(fake.url);
    const result = await runCli(['agent', '-m', 'hi'], home, { HTTPS_PROXY: p.url, HTTP_PROXY: p.url });
    expect(result.stdout.trim()).toBe('direct');
    expect(p.requests).toEqual([]);
  });

  it.each([
    ['providers.custom.proxy', 'ftp://127.0.0.1:21'],
    ['tools.web.proxy', 'socks4://127.0.0.1:1080'],
  ])('a bad %s is an error naming the key, not a silent direct connection', async (key, value) => {
    const fake = await fakeLLM([{ text: 'should not be reached directly' }]);
    const { home } = homeWith(fake.url);
    editConfig(home, (c) => {
      if (key === 'tools.web.proxy') c.tools = { web: { proxy: value } };
      else (c.providers.custom as Record<string, unknown>).proxy = value;
    });
    const result = await runCli(['agent', '-m', 'hi'], home);
    expect(`${result.stdout}\n${result.stderr}`).toContain(`${key}: proxy scheme`);
    expect(result.stdout).not.toContain('should not be reached directly');
  });
});
