import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { parseRetryAfter, toProviderError } from '../../src/providers/errors.js';

const openaiError = (status: number, body: object, headers: Record<string, string> = {}) =>
  OpenAI.APIError.generate(status, body, undefined, new Headers(headers));
const anthropicError = (status: number, type: string, message: string, headers: Record<string, string> = {}) =>
  Anthropic.APIError.generate(status, { type: 'error', error: { type, message } }, undefined, new Headers(headers));

describe('toProviderError', () => {
  it('429 is a retryable rate limit carrying Retry-After', () => {
    const error = toProviderError(openaiError(429, { error: { message: 'Slow down' } }, { 'retry-after': '2' }));
    expect(error).toMatchObject({ kind: 'rate_limit', status: 429, retryable: true, retryAfterMs: 2000 });
    expect(error.message).toContain('Slow down');
  });

  it('429 for an exhausted quota is not retried', () => {
    const body = { error: { message: 'You exceeded your current quota', type: 'insufficient_quota' } };
    expect(toProviderError(openaiError(429, body))).toMatchObject({ kind: 'quota', retryable: false });
  });

  it('401 and 403 are auth errors', () => {
    expect(toProviderError(anthropicError(401, 'authentication_error', 'invalid x-api-key'))).toMatchObject({
      kind: 'auth',
      retryable: false,
    });
    expect(toProviderError(openaiError(403, { error: { message: 'forbidden' } })).kind).toBe('auth');
  });

  it('context-length 400s from either vendor are context_overflow', () => {
    const openai = openaiError(400, { error: { message: 'too long', code: 'context_length_exceeded' } });
    expect(toProviderError(openai).kind).toBe('context_overflow');
    const anthropic = anthropicError(400, 'invalid_request_error', 'prompt is too long: 210000 tokens > 200000');
    expect(toProviderError(anthropic).kind).toBe('context_overflow');
  });

  it('other 4xx are bad requests, including request-side token limits', () => {
    const tooBig = { error: { message: 'max_tokens is too large: 100000. This model supports at most 16384 tokens' } };
    expect(toProviderError(openaiError(400, tooBig)).kind).toBe('bad_request');
    expect(toProviderError(openaiError(422, { error: { message: 'bad field' } }))).toMatchObject({
      kind: 'bad_request',
      retryable: false,
    });
  });

  it('5xx and Anthropic 529 overloaded are retryable server errors', () => {
    expect(toProviderError(openaiError(502, { error: { message: 'bad gateway' } }))).toMatchObject({
      kind: 'server',
      retryable: true,
    });
    expect(toProviderError(anthropicError(529, 'overloaded_error', 'Overloaded'))).toMatchObject({
      kind: 'server',
      status: 529,
      retryable: true,
    });
  });

  it('Chinese rate-limit wording counts as a rate limit whatever the status', () => {
    const error = toProviderError(openaiError(400, { error: { message: '请求过于频繁，请稍后再试' } }));
    expect(error).toMatchObject({ kind: 'rate_limit', retryable: true });
    expect(toProviderError(openaiError(503, { error: { message: '触发限流' } })).kind).toBe('rate_limit');
  });

  it('an error event inside the stream (no status) is judged by its words', () => {
    // What the SDK throws for an SSE `event: error` mid-stream.
    const body = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
    const overloaded = new Anthropic.APIError(undefined, body, undefined, undefined);
    expect(toProviderError(overloaded)).toMatchObject({ kind: 'server', retryable: true });
  });

  it('timeouts, dropped connections and aborts', () => {
    expect(toProviderError(new OpenAI.APIConnectionTimeoutError())).toMatchObject({ kind: 'timeout', retryable: true });
    expect(toProviderError(new Anthropic.APIConnectionError({ message: 'Connection error.' }))).toMatchObject({
      kind: 'network',
      retryable: true,
    });
    const refused = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }),
    });
    expect(toProviderError(refused)).toMatchObject({ kind: 'network', retryable: true });
    expect(toProviderError(new DOMException('aborted', 'AbortError'))).toMatchObject({
      kind: 'aborted',
      retryable: false,
    });
    expect(toProviderError(new OpenAI.APIUserAbortError()).kind).toBe('aborted');
    const controller = new AbortController();
    controller.abort();
    expect(toProviderError(new Error('anything'), controller.signal).kind).toBe('aborted');
  });
});

describe('parseRetryAfter', () => {
  it('reads milliseconds, seconds and HTTP dates', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '1500' }))).toBe(1500);
    expect(parseRetryAfter({ 'Retry-After': '3' })).toBe(3000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }, now)).toBe(5000);
    expect(parseRetryAfter({ 'retry-after': 'soon' })).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});
