import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createBedrockProvider } from '../../src/providers/bedrock.js';
import {
  createProvider,
  isResolveError,
  type ProviderSettings,
  type ResolvedProvider,
  resolveProvider,
} from '../../src/providers/index.js';
import type { ChatMessage, ChatRequest, ToolDefinition } from '../../src/providers/types.js';
import { type BedrockStreamItem, converseText, type FakeBedrock, startFakeBedrock } from '../helpers/fake-bedrock.js';
import { collect, recordingSleep, textOf } from './collect.js';

let fake: FakeBedrock | undefined;
afterEach(async () => {
  vi.unstubAllEnvs();
  await fake?.close();
  fake = undefined;
});

const CLAUDE = 'bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0';
const CLAUDE_ID = 'anthropic.claude-sonnet-4-5-20250929-v1:0';

function resolved(settings: ProviderSettings, model = CLAUDE): ResolvedProvider {
  const result = resolveProvider({ model, provider: 'auto', providers: { bedrock: settings }, env: {} });
  if (isResolveError(result)) throw new Error(`${result.error} ${result.hint}`);
  return result;
}

const request = (messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: CLAUDE,
  messages,
  maxTokens: 2000,
  temperature: 0.4,
  ...extra,
});
const readFile: ToolDefinition = {
  type: 'function',
  function: {
    name: 'read_file',
    description: 'Read a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
};

/** Signed reasoning, a sentence, then a tool call: what Claude on Bedrock streams for a thinking tool turn. */
const thinkingToolTurn: BedrockStreamItem[] = [
  { event: 'messageStart', payload: { role: 'assistant' } },
  { event: 'contentBlockDelta', payload: { contentBlockIndex: 0, delta: { reasoningContent: { text: 'Need the ' } } } },
  { event: 'contentBlockDelta', payload: { contentBlockIndex: 0, delta: { reasoningContent: { text: 'file.' } } } },
  {
    event: 'contentBlockDelta',
    payload: { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'sig-bedrock' } } },
  },
  { event: 'contentBlockStop', payload: { contentBlockIndex: 0 } },
  { event: 'contentBlockDelta', payload: { contentBlockIndex: 1, delta: { text: 'Reading it.' } } },
  { event: 'contentBlockStop', payload: { contentBlockIndex: 1 } },
  {
    event: 'contentBlockStart',
    payload: { contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tooluse_1', name: 'read_file' } } },
  },
  { event: 'contentBlockDelta', payload: { contentBlockIndex: 2, delta: { toolUse: { input: '{"path":' } } } },
  { event: 'contentBlockDelta', payload: { contentBlockIndex: 2, delta: { toolUse: { input: '"notes.md"}' } } } },
  { event: 'contentBlockStop', payload: { contentBlockIndex: 2 } },
  { event: 'messageStop', payload: { stopReason: 'tool_use' } },
  {
    event: 'metadata',
    payload: {
      usage: { inputTokens: 50, outputTokens: 30, totalTokens: 100, cacheReadInputTokens: 20 },
      metrics: { latencyMs: 9 },
    },
  },
];

describe('AWS Bedrock (Converse API)', () => {
  it('streams signed reasoning, text and a tool call through the real SDK, with a Bedrock API key', async () => {
    const warnings = vi.spyOn(process, 'emitWarning');
    fake = await startFakeBedrock([{ events: thinkingToolTurn }]);
    const provider = createProvider(resolved({ apiKey: 'bedrock-api-key', apiBase: fake.url, region: 'us-west-2' }));
    const { events, response } = await collect(
      provider,
      request([{ role: 'user', content: 'Summarise notes.md' }], { tools: [readFile], reasoningEffort: 'low' }),
    );
    expect(events.filter((e) => e.type === 'reasoning-delta').map((e) => (e as { text: string }).text)).toEqual([
      'Need the ',
      'file.',
    ]);
    expect(textOf(events)).toBe('Reading it.');
    expect(events.find((e) => e.type === 'tool-call-start')).toEqual({
      type: 'tool-call-start',
      id: 'tooluse_1',
      name: 'read_file',
    });
    expect(response).toMatchObject({
      content: 'Reading it.',
      reasoningContent: 'Need the file.',
      thinkingBlocks: [{ type: 'thinking', thinking: 'Need the file.', signature: 'sig-bedrock' }],
      finishReason: 'tool_calls',
      toolCalls: [
        { id: 'tooluse_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"notes.md"}' } },
      ],
      usage: { promptTokens: 70, completionTokens: 30, cachedTokens: 20 },
    });
    const sent = fake.requests[0];
    expect(sent?.path).toBe(`/model/${CLAUDE_ID}/converse-stream`);
    expect(sent?.headers.authorization).toBe('Bearer bedrock-api-key');
    expect(warnings.mock.calls.some(([w]) => String(w).includes('NodeVersionSupportWarning'))).toBe(false);
  });

  it('maps the conversation to Converse: system, tool use/results, replayed signed reasoning, thinking budget', async () => {
    fake = await startFakeBedrock([{ events: converseText('It says hello.') }]);
    const provider = createProvider(resolved({ apiKey: 'k', apiBase: fake.url, region: 'us-west-2' }));
    const history: ChatMessage[] = [
      { role: 'system', content: 'You are nanobot.' },
      { role: 'user', content: 'Summarise notes.md', timestamp: '2026-01-01T00:00:00Z' },
      {
        role: 'assistant',
        content: 'Reading it.',
        reasoning_content: 'Need the file.',
        thinking_blocks: [{ type: 'thinking', thinking: 'Need the file.', signature: 'sig-bedrock' }],
        tool_calls: [
          { id: 'tooluse_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"notes.md"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'tooluse_1', name: 'read_file', content: 'hello' },
    ];
    const { response } = await collect(provider, request(history, { tools: [readFile], reasoningEffort: 'low' }));
    expect(response.content).toBe('It says hello.');
    const body = fake.requests[0]?.body as Record<string, unknown>;
    const cachePoint = { cachePoint: { type: 'default' } };
    expect(body.system).toEqual([{ text: 'You are nanobot.' }, cachePoint]);
    expect(body.messages).toEqual([
      { role: 'user', content: [{ text: 'Summarise notes.md' }] },
      {
        role: 'assistant',
        content: [
          { reasoningContent: { reasoningText: { text: 'Need the file.', signature: 'sig-bedrock' } } },
          { text: 'Reading it.' },
          { toolUse: { toolUseId: 'tooluse_1', name: 'read_file', input: { path: 'notes.md' } } },
          cachePoint,
        ],
      },
      { role: 'user', content: [{ toolResult: { toolUseId: 'tooluse_1', content: [{ text: 'hello' }] } }] },
    ]);
    expect(body.toolConfig).toEqual({
      tools: [
        {
          toolSpec: {
            name: 'read_file',
            description: 'Read a file',
            inputSchema: { json: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
          },
        },
        cachePoint,
      ],
      toolChoice: { auto: {} },
    });
    // Thinking (nanobot's 1 k budget for "low") rules out temperature; max tokens keep room for the answer.
    expect(body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 1024 } });
    expect(body.inferenceConfig).toEqual({ maxTokens: 5120 });
  });

  it('signs with the AWS credential chain in the configured region, or the one the model id implies', async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY');
    vi.stubEnv('AWS_SESSION_TOKEN', undefined);
    vi.stubEnv('AWS_PROFILE', undefined);
    fake = await startFakeBedrock([{ events: converseText('one') }, { events: converseText('two') }]);
    const configured = createProvider(resolved({ apiBase: fake.url, region: 'eu-central-1' }));
    await collect(configured, request([{ role: 'user', content: 'hi' }], { temperature: 0.4 }));
    const inferred = createProvider(resolved({ apiBase: fake.url }, 'bedrock/eu.amazon.nova-pro-v1:0'));
    await collect(inferred, request([{ role: 'user', content: 'hi' }], { model: 'bedrock/eu.amazon.nova-pro-v1:0' }));
    const [first, second] = fake.requests;
    expect(first?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-central-1\/bedrock\//,
    );
    expect(first?.body.inferenceConfig).toEqual({ maxTokens: 2000, temperature: 0.4 });
    expect(second?.path).toBe('/model/eu.amazon.nova-pro-v1:0/converse-stream');
    expect(second?.headers.authorization).toMatch(/\/eu-west-1\/bedrock\//);
  });

  it('uses the named AWS profile, and the SDK region (else us-east-1) when nothing names one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nanobot-aws-'));
    await writeFile(
      join(dir, 'credentials'),
      '[work]\naws_access_key_id = AKIDWORKPROFILE\naws_secret_access_key = c2VjcmV0LXdvcms\n',
    );
    vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', join(dir, 'credentials'));
    vi.stubEnv('AWS_CONFIG_FILE', join(dir, 'config-none'));
    vi.stubEnv('AWS_ACCESS_KEY_ID', undefined);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', undefined);
    vi.stubEnv('AWS_PROFILE', undefined);
    vi.stubEnv('AWS_REGION', undefined);
    vi.stubEnv('AWS_DEFAULT_REGION', undefined);
    try {
      fake = await startFakeBedrock([{ events: converseText('one') }, { events: converseText('two') }]);
      await collect(
        createProvider(resolved({ apiBase: fake.url, profile: 'work' })),
        request([{ role: 'user', content: 'hi' }]),
      );
      vi.stubEnv('AWS_REGION', 'ap-south-1');
      vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
      vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY');
      await collect(createProvider(resolved({ apiBase: fake.url })), request([{ role: 'user', content: 'hi' }]));
      const [profiled, fromEnv] = fake.requests;
      expect(profiled?.headers.authorization).toMatch(/Credential=AKIDWORKPROFILE\/\d{8}\/us-east-1\/bedrock\//);
      expect(fromEnv?.headers.authorization).toMatch(/Credential=AKIDEXAMPLE\/\d{8}\/ap-south-1\/bedrock\//);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('retries a throttled stream, and reports an over-long prompt as context overflow', async () => {
    fake = await startFakeBedrock([
      { events: [{ exception: 'throttlingException', message: 'Too many tokens, please wait before trying again.' }] },
      { events: converseText('After the wait.') },
      { status: 400, errorType: 'ValidationException', message: 'Input is too long for requested model.' },
    ]);
    const timer = recordingSleep();
    const provider = createProvider(resolved({ apiKey: 'k', apiBase: fake.url, region: 'us-east-1' }), {
      sleep: timer.sleep,
    });
    const first = await collect(provider, request([{ role: 'user', content: 'hi' }]));
    expect(first.events[0]).toMatchObject({ type: 'retry-wait', error: { kind: 'rate_limit', retryable: true } });
    expect(first.response).toMatchObject({ content: 'After the wait.', finishReason: 'stop' });
    const second = await collect(provider, request([{ role: 'user', content: 'a very long prompt' }]));
    expect(second.response).toMatchObject({ finishReason: 'error', error: { kind: 'context_overflow', status: 400 } });
  });

  it('names the optional package when it is not installed', async () => {
    const provider = createBedrockProvider(
      resolved({ apiKey: 'k', region: 'us-east-1' }),
      {},
      { loadSdk: () => Promise.reject(new Error("Cannot find package '@aws-sdk/client-bedrock-runtime'")) },
    );
    const { response } = await collect(provider, request([{ role: 'user', content: 'hi' }]));
    expect(response).toMatchObject({ finishReason: 'error', error: { kind: 'bad_request', retryable: false } });
    expect(response.error?.message).toContain('@aws-sdk/client-bedrock-runtime');
    expect(response.error?.message).toContain('nanobot provider install bedrock');
  });
});
