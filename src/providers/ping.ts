/**
 * One tiny request to a model, to see that it answers and how fast: `nanobot doctor --ping` and the settings'
 * "test" button use it. Failures are data (the provider's typed error), never a throw.
 */
import type { LoadedConfig } from '../config/load.js';
import { adapterOptions } from './chain.js';
import { createProvider } from './index.js';
import type { ProviderOptions } from './options.js';
import type { ResolvedProvider } from './resolve.js';

export type PingResult =
  | { ok: true; ms: number; answer: string }
  | { ok: false; ms: number; kind: string; message: string };

const PING_TIMEOUT_MS = 60_000;

export async function pingModel(
  loaded: LoadedConfig,
  env: Record<string, string | undefined>,
  resolved: ResolvedProvider,
  adapter: ProviderOptions = {},
  now: () => number = () => performance.now(),
): Promise<PingResult> {
  const provider = createProvider(resolved, adapterOptions(loaded, env, { retryDelaysMs: [], ...adapter }));
  const started = now();
  const stream = provider.stream({
    model: resolved.model,
    messages: [{ role: 'user', content: 'Reply with the single word OK.' }],
    maxTokens: 16,
    signal: AbortSignal.timeout(PING_TIMEOUT_MS),
  });
  const response = await stream.result();
  const ms = Math.round(now() - started);
  if (response.finishReason === 'error') {
    return { ok: false, ms, kind: response.error?.kind ?? 'error', message: response.error?.message ?? 'no answer' };
  }
  return { ok: true, ms, answer: (response.content ?? '').trim().replace(/\s+/g, ' ').slice(0, 60) };
}
