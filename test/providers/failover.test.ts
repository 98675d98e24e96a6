import { describe, expect, it } from 'vitest';
import { CircuitBreakers, createFailoverProvider, type FailoverCandidate } from '../../src/providers/fallback.js';
import type { ChatRequest, LLMProvider, LLMResponse, ProviderError, StreamEvent } from '../../src/providers/types.js';
import { EventStream } from '../../src/util/event-stream.js';

type Step = { text?: string; error?: ProviderError };

/** A provider that answers from a script and records the requests it got. */
function scripted(steps: Step[]): LLMProvider & { requests: ChatRequest[] } {
  const requests: ChatRequest[] = [];
  return {
    name: 'scripted',
    requests,
    stream(request) {
      requests.push(request);
      const step = steps.shift() ?? { text: '(exhausted)' };
      const stream = new EventStream<StreamEvent, LLMResponse>();
      if (step.text) stream.push({ type: 'text-delta', text: step.text });
      stream.end(
        step.error
          ? { content: step.text ?? null, toolCalls: [], finishReason: 'error', error: step.error }
          : { content: step.text ?? '', toolCalls: [], finishReason: 'stop' },
      );
      return stream;
    },
  };
}

const fail = (kind: ProviderError['kind'], message: string = kind): Step => ({
  error: { kind, message, retryable: kind === 'rate_limit' || kind === 'server' },
});
const request: ChatRequest = { model: 'primary-model', messages: [{ role: 'user', content: 'hi' }], maxTokens: 100 };

function chain(providers: LLMProvider[], breakers = new CircuitBreakers()) {
  const candidates: FailoverCandidate[] = providers.map((provider, i) => ({
    label: i === 0 ? 'primary-model' : `fallback-${i}`,
    model: i === 0 ? 'primary-model' : `fallback-${i}`,
    provider,
    ...(i === 2 ? { maxTokens: 42 } : {}),
  }));
  return createFailoverProvider({ candidates, breakers });
}

async function run(provider: LLMProvider) {
  const stream = provider.stream(request);
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return { events, response: await stream.result() };
}

describe('failover across fallbackModels', () => {
  it('tries the fallbacks in order on retryable errors, each with its own model and limits', async () => {
    const primary = scripted([fail('rate_limit')]);
    const first = scripted([fail('server')]);
    const second = scripted([{ text: 'from the second fallback' }]);
    const { response } = await run(chain([primary, first, second]));
    expect(response.content).toBe('from the second fallback');
    expect(primary.requests[0]?.model).toBe('primary-model');
    expect(first.requests[0]?.model).toBe('fallback-1');
    expect(second.requests[0]).toMatchObject({ model: 'fallback-2', maxTokens: 42 });
  });

  it('does not switch once text has streamed to the user', async () => {
    const primary = scripted([{ text: 'Half an answ', error: { kind: 'network', message: 'reset', retryable: true } }]);
    const fallback = scripted([{ text: 'other model' }]);
    const { events, response } = await run(chain([primary, fallback]));
    expect(response.error?.kind).toBe('network');
    expect(fallback.requests).toHaveLength(0);
    expect(events).toEqual([{ type: 'text-delta', text: 'Half an answ' }]);
  });

  it('returns a context overflow as it is, for compaction, instead of switching models', async () => {
    const primary = scripted([fail('context_overflow', 'prompt is too long')]);
    const fallback = scripted([{ text: 'other model' }]);
    const { response } = await run(chain([primary, fallback]));
    expect(response.error).toMatchObject({ kind: 'context_overflow', message: 'prompt is too long' });
    expect(fallback.requests).toHaveLength(0);
  });

  it('keeps the overflow kind when a fallback overflows after the primary failed', async () => {
    const primary = scripted([fail('rate_limit', 'busy')]);
    const fallback = scripted([fail('context_overflow', 'too long')]);
    const { response } = await run(chain([primary, fallback]));
    expect(response.error?.kind).toBe('context_overflow');
    expect(response.error?.message).toBe('too long [also failed: primary-model (rate_limit)]');
  });

  it('does not fail over a bad request (a switch would only hide it)', async () => {
    const fallback = scripted([{ text: 'x' }]);
    const { response } = await run(chain([scripted([fail('bad_request')]), fallback]));
    expect(response.error?.kind).toBe('bad_request');
    expect(fallback.requests).toHaveLength(0);
  });

  it("when every model fails, reports the first model's error and names the others", async () => {
    const { response } = await run(
      chain([scripted([fail('quota', 'Out of credit')]), scripted([fail('rate_limit')]), scripted([fail('server')])]),
    );
    expect(response.error?.kind).toBe('quota');
    expect(response.error?.message).toBe('Out of credit [also failed: fallback-1 (rate_limit), fallback-2 (server)]');
  });
});

describe('the circuit breaker', () => {
  it('skips a model after N consecutive failures for the cool-down, then probes it again', async () => {
    let now = 0;
    const breakers = new CircuitBreakers({ threshold: 2, cooldownMs: 1000, now: () => now });
    const primary = scripted([fail('server'), fail('server'), { text: 'primary is back' }]);
    const fallback = scripted([{ text: 'f1' }, { text: 'f2' }, { text: 'f3' }]);
    const provider = chain([primary, fallback], breakers);

    expect((await run(provider)).response.content).toBe('f1');
    expect((await run(provider)).response.content).toBe('f2');
    expect(breakers.isOpen('primary-model')).toBe(true);
    expect((await run(provider)).response.content).toBe('f3');
    expect(primary.requests).toHaveLength(2); // skipped while open

    now = 1000;
    expect((await run(provider)).response.content).toBe('primary is back');
    expect(breakers.failures('primary-model')).toBe(0);
  });

  it('opens at once, for the long cool-down, on a quota error', async () => {
    let now = 0;
    const breakers = new CircuitBreakers({ threshold: 3, cooldownMs: 1000, lastingCooldownMs: 60_000, now: () => now });
    const primary = scripted([fail('quota')]);
    const fallback = scripted([{ text: 'a' }, { text: 'b' }]);
    const provider = chain([primary, fallback], breakers);
    await run(provider);
    now = 30_000;
    expect((await run(provider)).response.content).toBe('b');
    expect(primary.requests).toHaveLength(1);
  });

  it('probes the primary when every breaker is open rather than failing without a try', async () => {
    const breakers = new CircuitBreakers({ threshold: 1 });
    const primary = scripted([fail('server'), { text: 'recovered' }]);
    const fallback = scripted([fail('server')]);
    const provider = chain([primary, fallback], breakers);
    await run(provider);
    expect((await run(provider)).response.content).toBe('recovered');
  });
});
