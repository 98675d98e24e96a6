/**
 * A stream that stalls after its headers (issue 16 item 3). The fake LLM sends the headers and the first events of a
 * reply, then holds the connection (the explicit gate); the idle timer is a manual one the test fires once the stall
 * is in place, so nothing here waits on the clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createAnthropicProvider } from '../../src/providers/anthropic.js';
import { createOpenAICompatProvider } from '../../src/providers/openai-compat.js';
import type { ProviderOptions } from '../../src/providers/options.js';
import { withRetry } from '../../src/providers/retry.js';
import type { ChatRequest, LLMProvider, LLMResponse, StreamEvent } from '../../src/providers/types.js';
import { EventStream } from '../../src/util/event-stream.js';
import { type FakeLLM, type FakeScriptStep, startFakeLLM } from '../helpers/fake-llm.js';
import { ManualTimers } from '../helpers/manual-timers.js';
import { collect, recordingSleep, resolvedProvider, textOf } from './collect.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const STALL_MESSAGE = /^The model's stream stalled for 90 s .*; set NANOBOT_STREAM_IDLE_TIMEOUT_S to wait longer\.$/;

const request = (model: string): ChatRequest => ({
  model,
  messages: [{ role: 'user', content: 'hi' }],
  maxTokens: 256,
});

type Wire = 'openai' | 'anthropic';

async function setup(wire: Wire, script: FakeScriptStep[]) {
  fake = await startFakeLLM(script);
  const timers = new ManualTimers();
  const { sleep, waits } = recordingSleep();
  const options: ProviderOptions = { sleep, timers, streamIdleTimeoutMs: 90_000 };
  const provider: LLMProvider =
    wire === 'openai'
      ? createOpenAICompatProvider(resolvedProvider('custom', 'm', { apiKey: 'k', apiBase: `${fake.url}/v1` }), options)
      : createAnthropicProvider(
          resolvedProvider('anthropic', 'claude-sonnet-4-5', { apiKey: 'k', apiBase: fake.url }),
          {
            ...options,
          },
        );
  const model = wire === 'openai' ? 'm' : 'claude-sonnet-4-5';
  return { fake, timers, waits, provider, model };
}

async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`never happened: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Reads the stream; the first time `when` matches an event, fires the idle timer (the stall is in place by then). */
async function readFiring(
  provider: LLMProvider,
  req: ChatRequest,
  timers: ManualTimers,
  when: (event: StreamEvent) => boolean,
): Promise<{ events: StreamEvent[]; response: LLMResponse; fired: number }> {
  const stream = provider.stream(req);
  const events: StreamEvent[] = [];
  let fired = 0;
  for await (const event of stream) {
    events.push(event);
    if (fired === 0 && when(event)) fired = timers.fire();
  }
  return { events, response: await stream.result(), fired };
}

/** Events before the text: openai sends a role chunk; anthropic message_start and content_block_start. */
const BEFORE_TEXT: Record<Wire, number> = { openai: 1, anthropic: 2 };

describe.each<Wire>(['openai', 'anthropic'])('a stream that stalls after its headers (%s wire)', (wire) => {
  it('is retried when it stalls before anything reached the user, and the retry answers', async () => {
    const { fake, timers, waits, provider, model } = await setup(wire, [
      { text: 'never sent', stallAfterEvents: BEFORE_TEXT[wire] },
      { text: 'Recovered answer.' },
    ]);
    const pending = collect(provider, request(model));
    await until(() => fake.stalls() === 1, 'the first reply stalls');
    await timers.armed();
    expect(timers.fire()).toBe(1);
    const { events, response } = await pending;

    expect(response).toMatchObject({ finishReason: 'stop', content: 'Recovered answer.' });
    expect(textOf(events)).toBe('Recovered answer.');
    expect(fake.requests).toHaveLength(2);
    const wait = events.find((e) => e.type === 'retry-wait');
    expect(wait).toMatchObject({ attempt: 1, error: { kind: 'timeout', retryable: true } });
    expect(wait?.type === 'retry-wait' ? wait.error.message : '').toMatch(STALL_MESSAGE);
    expect(waits).toEqual([1000]);
    expect(timers.delays.every((ms) => ms === 90_000)).toBe(true);
  });

  it('ends with a timeout error that keeps the partial text once text has streamed (no retry)', async () => {
    const { fake, timers, provider, model } = await setup(wire, [
      { text: 'Let me look into that for you.', stallAfterEvents: BEFORE_TEXT[wire] + 1 },
      { text: 'a retry would show the text twice' },
    ]);
    const { events, response, fired } = await readFiring(
      provider,
      request(model),
      timers,
      (e) => e.type === 'text-delta',
    );

    expect(fired).toBe(1);
    const partial = textOf(events);
    expect(partial.length).toBeGreaterThan(0);
    expect('Let me look into that for you.'.startsWith(partial)).toBe(true);
    expect(response).toMatchObject({ finishReason: 'error', content: partial, error: { kind: 'timeout' } });
    expect(response.error?.message).toMatch(STALL_MESSAGE);
    expect(fake.requests).toHaveLength(1);
    expect(events.some((e) => e.type === 'retry-wait')).toBe(false);
  });

  it('counts every chunk from the wire as life, silent ones (tool-call arguments) included', async () => {
    const { timers, provider, model } = await setup(wire, [
      { toolCalls: [{ name: 'write_file', arguments: { path: 'notes/long.md', content: 'x'.repeat(60) } }] },
    ]);
    const { events, response } = await collect(provider, request(model));
    expect(response.finishReason).toBe('tool_calls');
    // One visible event, but the timer was re-armed on the response's start and on every chunk after it.
    expect(events.filter((e) => e.type !== 'retry-wait')).toHaveLength(1);
    expect(timers.delays.length).toBeGreaterThanOrEqual(6);
    expect(timers.armedCount).toBe(0);
  });
});

describe('the watch over an attempt (withRetry)', () => {
  it('gives up on an adapter that never settles once its stream stalls, keeping the streamed text', async () => {
    const timers = new ManualTimers();
    const stream = new EventStream<StreamEvent, LLMResponse>();
    const lateEvents: StreamEvent[] = [];
    let lateEmit: ((event: StreamEvent) => void) | undefined;
    const result = withRetry(
      stream,
      async (emit) => {
        emit({ type: 'text-delta', text: 'Half an answer' });
        lateEmit = emit;
        return new Promise<LLMResponse>(() => {}); // ignores its signal, never ends
      },
      { idleTimeoutMs: 5_000, timers, sleep: async () => {} },
    );
    await timers.armed();
    timers.fire();
    const response = await result;
    expect(response).toMatchObject({ finishReason: 'error', content: 'Half an answer', error: { kind: 'timeout' } });
    expect(response.error?.message).toMatch(/stalled for 5 s/);
    lateEmit?.({ type: 'text-delta', text: ' (too late)' });
    stream.end(response);
    for await (const event of stream) lateEvents.push(event);
    expect(textOf(lateEvents)).toBe('Half an answer');
  });

  it('ends an attempt that never settles as soon as the caller aborts', async () => {
    const controller = new AbortController();
    const stream = new EventStream<StreamEvent, LLMResponse>();
    const result = withRetry(stream, () => new Promise<LLMResponse>(() => {}), {
      signal: controller.signal,
      idleTimeoutMs: 5_000,
      timers: new ManualTimers(),
    });
    controller.abort();
    expect(await result).toMatchObject({ finishReason: 'error', error: { kind: 'aborted', retryable: false } });
  });

  it('arms no idle timer without an idle limit (a direct withRetry call)', async () => {
    const timers = new ManualTimers();
    const stream = new EventStream<StreamEvent, LLMResponse>();
    const response = await withRetry(
      stream,
      async (emit) => {
        emit({ type: 'text-delta', text: 'ok' });
        return { content: 'ok', toolCalls: [], finishReason: 'stop' };
      },
      { timers },
    );
    expect(response.content).toBe('ok');
    expect(timers.delays).toEqual([]);
  });
});
