import { afterEach, describe, expect, it } from 'vitest';
import { createProvider, findSpec, isResolveError, resolveProvider } from '../../src/providers/index.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { collect, textOf } from './collect.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe('createProvider', () => {
  it('resolves and talks to either wire through one entry point', async () => {
    fake = await startFakeLLM([{ text: 'from the openai wire' }, { text: 'from the anthropic wire' }]);
    const env = { DEEPSEEK_API_KEY: 'd', ANTHROPIC_API_KEY: 'a' };
    const providers = { deepseek: { apiBase: `${fake.url}/v1` }, anthropic: { apiBase: fake.url } };
    for (const [model, expected] of [
      ['deepseek-chat', 'from the openai wire'],
      ['claude-haiku-4-5', 'from the anthropic wire'],
    ] as const) {
      const resolved = resolveProvider({ model, provider: 'auto', providers, env });
      if (isResolveError(resolved)) throw new Error(resolved.error);
      const { events, response } = await collect(createProvider(resolved, { sleep: async () => {} }), {
        model,
        messages: [{ role: 'user', content: 'hi' }],
        maxTokens: 100,
      });
      expect(textOf(events)).toBe(expected);
      expect(response.content).toBe(expected);
    }
    expect(fake.requests.map((r) => r.path)).toEqual(['/v1/chat/completions', '/v1/messages']);
  });

  it('a hand-built provider the runtime cannot serve fails as data', async () => {
    const openai = findSpec('openai');
    if (!openai) throw new Error('openai missing');
    const spec = { ...openai, unsupported: 'this build cannot reach it' };
    const provider = createProvider({
      name: 'openai',
      spec,
      wire: spec.wire,
      apiBase: 'https://api.example',
      model: 'gpt-x',
      upstreamModel: 'gpt-x',
      settings: {},
    });
    const { response } = await collect(provider, { model: 'x', messages: [], maxTokens: 10 });
    expect(response).toMatchObject({ finishReason: 'error', error: { kind: 'bad_request', retryable: false } });
    expect(response.error?.message).toMatch(/not supported yet/);
  });
});
