import {
  isResolveError,
  type ProviderSettings,
  type ResolvedProvider,
  resolveProvider,
} from '../../src/providers/index.js';
import type { ChatRequest, LLMProvider, LLMResponse, StreamEvent } from '../../src/providers/types.js';

/** Runs one request to the end: every streamed event, in order, and the final response. */
export async function collect(
  provider: LLMProvider,
  request: ChatRequest,
): Promise<{ events: StreamEvent[]; response: LLMResponse }> {
  const stream = provider.stream(request);
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return { events, response: await stream.result() };
}

export const textOf = (events: StreamEvent[]): string =>
  events.map((e) => (e.type === 'text-delta' ? e.text : '')).join('');

/** A sleep that returns at once and remembers what it was asked to wait. */
export function recordingSleep(): { sleep: (ms: number) => Promise<void>; waits: number[] } {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (ms: number) => {
      waits.push(ms);
    },
  };
}

/** The provider a config with one `providers.<provider>` block resolves to; a config that does not resolve throws. */
export function resolvedProvider(provider: string, model: string, settings: ProviderSettings): ResolvedProvider {
  const result = resolveProvider({ model, provider, providers: { [provider]: settings }, env: {} });
  if (isResolveError(result)) throw new Error(result.error);
  return result;
}
