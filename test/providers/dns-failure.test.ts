/**
 * A host name that does not resolve (a typo in apiBase, no network, no DNS server) fails at once with the setting
 * to check: it is not retried 1 s / 2 s / 4 s. Real node-fetch over node:http, its DNS lookup failing as the OS
 * resolver does, on both wire adapters; then the thrown shapes other clients produce. A refused connection (the
 * control) is still retried.
 */
import http from 'node:http';
import type { LookupFunction } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import nodeFetch from 'node-fetch';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createAnthropicProvider } from '../../src/providers/anthropic.js';
import { toProviderError } from '../../src/providers/errors.js';
import { createOpenAICompatProvider } from '../../src/providers/openai-compat.js';
import { collect, recordingSleep, resolvedProvider } from './collect.js';

/** A lookup that fails as getaddrinfo does (`getaddrinfo ENOTFOUND host`, code and syscall set). */
function failingLookup(code: string): LookupFunction {
  return (hostname, _options, callback) => {
    const error = Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), {
      code,
      errno: code === 'ENOTFOUND' ? -3008 : -3001,
      syscall: 'getaddrinfo',
      hostname,
    });
    process.nextTick(() => callback(error, '', 4));
  };
}

/** node-fetch (the SDKs' client) over an agent whose lookups fail; counts the requests tried. */
function failingFetch(code: string): { fetch: typeof globalThis.fetch; calls: () => number } {
  let calls = 0;
  const agent = new http.Agent({ lookup: failingLookup(code) });
  const fetch = ((url: string, init: Record<string, unknown>) => {
    calls++;
    return nodeFetch(url, { ...init, agent });
  }) as unknown as typeof globalThis.fetch;
  return { fetch, calls: () => calls };
}

const request = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 16, temperature: 0 };

const wires = [
  {
    wire: 'openai',
    make: (fetch: typeof globalThis.fetch, sleep: (ms: number) => Promise<void>) =>
      createOpenAICompatProvider(
        resolvedProvider('custom', 'm', { apiKey: 'k', apiBase: 'http://llm.nanobot-typo.example/v1' }),
        { fetch, sleep },
      ),
  },
  {
    wire: 'anthropic',
    make: (fetch: typeof globalThis.fetch, sleep: (ms: number) => Promise<void>) =>
      createAnthropicProvider(
        resolvedProvider('anthropic', 'claude-x', { apiKey: 'k', apiBase: 'http://llm.nanobot-typo.example' }),
        { fetch, sleep },
      ),
  },
];

describe('a provider host that does not resolve', () => {
  for (const { wire, make } of wires) {
    for (const code of ['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL']) {
      it(`${wire} wire, ${code}: one attempt, no retry waits, a network error naming the host`, async () => {
        const { fetch, calls } = failingFetch(code);
        const timer = recordingSleep();
        const { events, response } = await collect(make(fetch, timer.sleep), request);
        expect(response.error).toMatchObject({ kind: 'network', retryable: false });
        expect(response.error?.message).toContain(code);
        expect(response.error?.message).toContain('llm.nanobot-typo.example');
        expect(calls()).toBe(1);
        expect(timer.waits).toEqual([]);
        expect(events.filter((e) => e.type === 'retry-wait')).toEqual([]);
      });
    }

    it(`${wire} wire, control: a refused connection is still retried 3 times`, async () => {
      let calls = 0;
      const agent = new http.Agent({
        lookup: (_h, _o, cb) => cb(null, '127.0.0.1', 4),
      });
      const fetch = ((url: string, init: Record<string, unknown>) => {
        calls++;
        // Port 9 (discard) on loopback: nothing listens there in CI, so the connection is refused.
        return nodeFetch(url.replace('llm.nanobot-typo.example', '127.0.0.1:9'), { ...init, agent });
      }) as unknown as typeof globalThis.fetch;
      const timer = recordingSleep();
      const { response } = await collect(make(fetch, timer.sleep), request);
      expect(response.error).toMatchObject({ kind: 'network', retryable: true });
      expect(calls).toBe(4);
      expect(timer.waits).toEqual([1000, 2000, 4000]);
    });
  }

  it('every thrown shape of a DNS failure is final; other network errors stay retryable', () => {
    const dns = (code: string) => Object.assign(new Error(`getaddrinfo ${code} api.example.com`), { code });
    const finalShapes: unknown[] = [
      dns('ENOTFOUND'),
      dns('EAI_AGAIN'),
      // undici / Node's fetch: TypeError("fetch failed") with the socket error as its cause.
      new TypeError('fetch failed', { cause: dns('ENOTFOUND') }),
      new TypeError('fetch failed', { cause: new Error('wrapped', { cause: dns('EAI_AGAIN') }) }),
      // The SDKs' own wrapper around the client's error.
      new OpenAI.APIConnectionError({ message: 'Connection error.', cause: dns('ENOTFOUND') }),
      new Anthropic.APIConnectionError({ message: 'Connection error.', cause: dns('EAI_AGAIN') }),
      // Only the words survived (a proxy or an SDK that drops `code`).
      new Error('request to https://api.example.com/v1 failed, reason: getaddrinfo ENOTFOUND api.example.com'),
      new OpenAI.APIConnectionError({ message: 'Connection error: getaddrinfo EAI_AGAIN api.example.com' }),
    ];
    for (const shape of finalShapes) {
      expect(toProviderError(shape), String(shape)).toMatchObject({ kind: 'network', retryable: false });
    }
    const retryable = ['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH'].map((code) =>
      Object.assign(new Error(`connect ${code}`), { code }),
    );
    for (const shape of retryable) expect(toProviderError(shape)).toMatchObject({ kind: 'network', retryable: true });
  });
});
