/**
 * providers.<name>.proxy at the provider layer: requests go through the proxy, a malformed proxy URL and a proxy on
 * Bedrock (whose AWS SDK does not use our fetch) fail as data naming the key instead of connecting directly.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createProvider, isResolveError, resolveProvider } from '../../src/providers/index.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { type RecordingProxy, startRecordingProxy } from '../helpers/recording-proxy.js';
import { collect } from './collect.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const request = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 10 };

function resolved(provider: string, settings: Record<string, unknown>, env: Record<string, string> = {}) {
  const result = resolveProvider({ model: 'test-model', provider, providers: { [provider]: settings }, env });
  if (isResolveError(result)) throw new Error(result.error);
  return result;
}

describe('providers.<name>.proxy', () => {
  it('sends the request through the proxy', async () => {
    const fake: FakeLLM = await startFakeLLM([{ text: 'proxied' }]);
    const proxy: RecordingProxy = await startRecordingProxy();
    cleanups.push(
      () => fake.close(),
      () => proxy.close(),
    );
    const provider = createProvider(resolved('custom', { apiKey: 'k', apiBase: `${fake.url}/v1`, proxy: proxy.url }));
    const { response } = await collect(provider, request);
    expect(response.content).toBe('proxied');
    expect(proxy.requests.map((r) => r.target)).toEqual([new URL(fake.url).host]);
  });

  it.each([
    [
      'custom',
      { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1', proxy: 'ftp://127.0.0.1:21' },
      /providers\.custom\.proxy: proxy scheme 'ftp:'/,
    ],
    [
      'custom',
      { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1', proxy: '127.0.0.1:7890' },
      /providers\.custom\.proxy: /,
    ],
    [
      'bedrock',
      { region: 'us-east-1', proxy: 'http://127.0.0.1:7890' },
      /providers\.bedrock\.proxy is not supported for Bedrock/,
    ],
  ])('%s with proxy %o fails as data naming the key', async (name, settings, message) => {
    const env = { AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' };
    const { response } = await collect(createProvider(resolved(name, settings, env)), request);
    expect(response.finishReason).toBe('error');
    expect(response.error?.message).toMatch(message);
  });
});
