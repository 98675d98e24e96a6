import { describe, expect, it } from 'vitest';
import { providerErrorFromStatus, toProviderError } from '../../src/providers/errors.js';
import { errorResponse, PERSISTENT_MAX_DELAY_MS, withRetry } from '../../src/providers/retry.js';
import type { LLMResponse, ProviderError, StreamEvent } from '../../src/providers/types.js';
import { EventStream } from '../../src/util/event-stream.js';

const done: LLMResponse = { content: 'ok', toolCalls: [], finishReason: 'stop' };

/** Runs withRetry against a fixed failure; returns the attempts made and the waits asked for. */
async function retrying(error: ProviderError, options: { mode?: 'standard' | 'persistent'; abortAfter?: number }) {
  const controller = new AbortController();
  const waits: number[] = [];
  let attempts = 0;
  const result = await withRetry(
    new EventStream<StreamEvent, LLMResponse>(),
    async () => {
      attempts++;
      return errorResponse(error);
    },
    {
      signal: controller.signal,
      ...(options.mode ? { mode: options.mode } : {}),
      sleep: async (ms) => {
        waits.push(ms);
        if (options.abortAfter !== undefined && waits.length >= options.abortAfter) controller.abort();
      },
    },
  );
  return { attempts, waits, result };
}

const rateLimit: ProviderError = { kind: 'rate_limit', message: '请求过于频繁', retryable: true, status: 429 };

describe('providerRetryMode', () => {
  it('standard: three retries (1 s, 2 s, 4 s), then the error', async () => {
    const { attempts, waits, result } = await retrying(rateLimit, {});
    expect(attempts).toBe(4);
    expect(waits).toEqual([1000, 2000, 4000]);
    expect(result.error?.kind).toBe('rate_limit');
  });

  it('persistent: keeps retrying a rate limit with doubling waits capped at 60 s until the turn is aborted', async () => {
    const { attempts, waits, result } = await retrying(rateLimit, { mode: 'persistent', abortAfter: 15 });
    expect(attempts).toBe(15);
    expect(waits.slice(0, 7)).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, PERSISTENT_MAX_DELAY_MS]);
    expect(Math.max(...waits)).toBe(PERSISTENT_MAX_DELAY_MS);
    expect(result.error?.kind).toBe('aborted');
  });

  it('persistent: a server error that keeps coming back the same is final after 10 attempts', async () => {
    const server: ProviderError = { kind: 'server', message: 'HTTP 503: down', retryable: true, status: 503 };
    const { attempts, result } = await retrying(server, { mode: 'persistent' });
    expect(attempts).toBe(10);
    expect(result.error?.kind).toBe('server');
  });

  it('never retries a quota error, in either mode', async () => {
    const quota = providerErrorFromStatus(429, 'You exceeded your current quota [insufficient_quota]');
    expect((await retrying(quota, { mode: 'persistent' })).attempts).toBe(1);
    const ok = await withRetry(new EventStream<StreamEvent, LLMResponse>(), async () => done, { mode: 'persistent' });
    expect(ok).toBe(done);
  });
});

describe('rate-limit and quota classification', () => {
  it('recognises localized rate-limit messages, with or without a 429', () => {
    for (const message of ['请求过于频繁，请稍后再试', '触发限流', '超出速率限制', 'Rate limit reached for requests']) {
      expect(providerErrorFromStatus(400, message), message).toMatchObject({ kind: 'rate_limit', retryable: true });
      expect(toProviderError(new Error(message)), message).toMatchObject({ kind: 'rate_limit', retryable: true });
    }
  });

  it('treats quota and arrears as final, with a message that says so', () => {
    for (const [status, message] of [
      [429, 'You exceeded your current quota [insufficient_quota]'],
      [400, 'Arrearage: Access denied, please make sure your account is in good standing'],
      [403, '账户已欠费'],
      [400, '余额不足'],
      [402, 'Payment Required'],
      [400, 'Your credit balance is too low; see Plans & Billing'],
    ] as const) {
      const error = providerErrorFromStatus(status, message);
      expect(error, message).toMatchObject({ kind: 'quota', retryable: false });
      expect(error.message).toMatch(/^Out of credit or quota \(HTTP \d+\): /);
    }
    expect(toProviderError(new Error('余额不足，请充值'))).toMatchObject({ kind: 'quota', retryable: false });
  });

  it('a per-minute quota (Gemini free tier) is a rate limit, not an empty account', () => {
    const error = providerErrorFromStatus(
      429,
      'Quota exceeded for metric generate_content_free_tier_requests, limit: 15 per minute. Please retry in 20s.',
    );
    expect(error).toMatchObject({ kind: 'rate_limit', retryable: true });
  });
});
