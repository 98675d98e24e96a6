import { describe, expect, it } from 'vitest';
import { errorResponse, withRetry } from '../../src/providers/retry.js';
import type { LLMResponse, StreamEvent } from '../../src/providers/types.js';
import { EventStream } from '../../src/util/event-stream.js';

const rateLimited = (retryAfterMs?: number) =>
  errorResponse({ kind: 'rate_limit', message: 'slow down', retryable: true, status: 429, retryAfterMs });
const done: LLMResponse = { content: 'ok', toolCalls: [], finishReason: 'stop' };

describe('withRetry', () => {
  it('caps a server-requested wait at 60 s', async () => {
    const waits: number[] = [];
    const replies = [rateLimited(3_600_000), done];
    const stream = new EventStream<StreamEvent, LLMResponse>();
    const result = await withRetry(stream, async () => replies.shift() ?? done, {
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    expect(result).toBe(done);
    expect(waits).toEqual([60_000]);
  });

  it('an abort during the wait ends the call as aborted instead of retrying', async () => {
    const controller = new AbortController();
    let attempts = 0;
    const stream = new EventStream<StreamEvent, LLMResponse>();
    const result = await withRetry(
      stream,
      async () => {
        attempts++;
        return rateLimited();
      },
      {
        signal: controller.signal,
        sleep: async () => {
          controller.abort();
        },
      },
    );
    expect(attempts).toBe(1);
    expect(result).toMatchObject({ finishReason: 'error', error: { kind: 'aborted', retryable: false } });
  });

  it('a thrown error becomes an error response, never a rejection', async () => {
    const stream = new EventStream<StreamEvent, LLMResponse>();
    const result = await withRetry(
      stream,
      async () => {
        throw Object.assign(new Error('Unauthorized'), { status: 401 });
      },
      { sleep: async () => {} },
    );
    expect(result).toMatchObject({ finishReason: 'error', error: { kind: 'auth', status: 401 } });
  });
});
