import { afterEach, describe, expect, it } from 'vitest';
import { createProvider, isResolveError, type ProviderSettings, resolveProvider } from '../../src/providers/index.js';
import type { ChatRequest } from '../../src/providers/types.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { type FakeWire, responsesStream, startFakeWire } from '../helpers/fake-wire.js';
import { collect } from './collect.js';

let fake: FakeLLM | undefined;
let wire: FakeWire | undefined;
afterEach(async () => {
  await fake?.close();
  await wire?.close();
  fake = undefined;
  wire = undefined;
});

function azure(settings: ProviderSettings, model = 'azure/team-gpt4o') {
  const result = resolveProvider({ model, provider: 'auto', providers: { azureOpenai: settings }, env: {} });
  if (isResolveError(result)) throw new Error(`${result.error} ${result.hint}`);
  return createProvider(result, { sleep: async () => {} });
}

const ask = (model = 'azure/team-gpt4o'): ChatRequest => ({
  model,
  messages: [{ role: 'user', content: 'hi' }],
  maxTokens: 300,
  temperature: 0.3,
});

describe('Azure OpenAI', () => {
  it('calls the deployment named by the model, with the api-version and the api-key header', async () => {
    fake = await startFakeLLM([{ text: 'Hello from Azure.' }]);
    const { response } = await collect(azure({ apiKey: 'az-key', apiBase: `${fake.url}/` }), ask());
    expect(response).toMatchObject({ content: 'Hello from Azure.', finishReason: 'stop' });
    const sent = fake.requests[0];
    expect(sent?.path).toBe('/openai/deployments/team-gpt4o/chat/completions');
    expect(sent?.query).toEqual({ 'api-version': '2024-10-21' });
    expect(sent?.headers['api-key']).toBe('az-key');
    expect(sent?.headers.authorization).toBeUndefined();
    expect(sent?.body).toMatchObject({ model: 'team-gpt4o', max_completion_tokens: 300, stream: true });
  });

  it('takes apiVersion from the config and accepts an endpoint pasted with /openai', async () => {
    fake = await startFakeLLM([{ text: 'ok' }]);
    const provider = azure({ apiKey: 'az-key', apiBase: `${fake.url}/openai/`, apiVersion: '2025-04-01-preview' });
    await collect(provider, ask());
    expect(fake.requests[0]?.path).toBe('/openai/deployments/team-gpt4o/chat/completions');
    expect(fake.requests[0]?.query).toEqual({ 'api-version': '2025-04-01-preview' });
  });

  it('with apiType "responses", uses the v1 Responses endpoint', async () => {
    wire = await startFakeWire([
      responsesStream([
        {
          type: 'response.output_text.delta',
          item_id: 'm',
          output_index: 0,
          content_index: 0,
          delta: 'Via Responses.',
        },
        { type: 'response.completed', response: { status: 'completed', output: [] } },
      ]),
    ]);
    const provider = azure({ apiKey: 'az-key', apiBase: wire.url, apiType: 'responses' });
    const { response } = await collect(provider, ask());
    expect(response.content).toBe('Via Responses.');
    const sent = wire.requests[0];
    expect(sent?.path).toBe('/openai/v1/responses');
    expect(sent?.headers['api-key']).toBe('az-key');
    expect(sent?.body).toMatchObject({ model: 'team-gpt4o', max_output_tokens: 300, store: false });
  });
});
