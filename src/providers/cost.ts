/**
 * Token usage arithmetic and the optional price table (`agents.defaults.modelPrices`, USD per 1M tokens).
 * A response is priced when it arrives, with the price of the model that actually answered (a fallback model has
 * its own), so a session's cost stays right across `/model` switches and failover.
 */
import { EventStream } from '../util/event-stream.js';
import { toProviderError } from './errors.js';
import { errorResponse } from './retry.js';
import type { ChatRequest, LLMProvider, LLMResponse, StreamEvent, Usage } from './types.js';

/** USD per 1M tokens. `cached` (cache reads) defaults to `input`; `cacheWrite` (Anthropic) to `input` too. */
export interface ModelPrice {
  input: number;
  output: number;
  cached?: number;
  cacheWrite?: number;
}

export type PriceTable = Readonly<Record<string, ModelPrice>>;

/**
 * The price of a model: an exact entry for the configured name (`anthropic/claude-opus-4-5`) wins, then the name
 * without its provider prefix (`claude-opus-4-5`), then the last path segment. Case does not matter.
 */
export function findPrice(prices: PriceTable, ...names: string[]): ModelPrice | undefined {
  const byName = new Map(Object.entries(prices).map(([name, price]) => [name.toLowerCase(), price]));
  const tries = names.flatMap((name) => {
    const lower = name.toLowerCase();
    const slash = lower.indexOf('/');
    return [lower, slash > 0 ? lower.slice(slash + 1) : lower, lower.split('/').pop() ?? lower];
  });
  for (const name of tries) {
    const price = byName.get(name);
    if (price) return price;
  }
  return undefined;
}

/** USD for one response. Cached and cache-write tokens are part of `promptTokens` and priced at their own rate. */
export function costOf(usage: Usage, price: ModelPrice): number {
  const cached = usage.cachedTokens ?? 0;
  const written = usage.cacheWriteTokens ?? 0;
  const fresh = Math.max(0, usage.promptTokens - cached - written);
  const dollars =
    fresh * price.input +
    cached * (price.cached ?? price.input) +
    written * (price.cacheWrite ?? price.input) +
    usage.completionTokens * price.output;
  return dollars / 1_000_000;
}

/** Adds `more` into `total` (in place): the one place that knows every usage field. */
export function addUsage(total: Usage, more: Usage | undefined): Usage {
  if (!more) return total;
  total.promptTokens += more.promptTokens;
  total.completionTokens += more.completionTokens;
  total.cachedTokens = (total.cachedTokens ?? 0) + (more.cachedTokens ?? 0);
  if (more.cacheWriteTokens) total.cacheWriteTokens = (total.cacheWriteTokens ?? 0) + more.cacheWriteTokens;
  if (more.reasoningTokens) total.reasoningTokens = (total.reasoningTokens ?? 0) + more.reasoningTokens;
  if (more.costUsd !== undefined) total.costUsd = (total.costUsd ?? 0) + more.costUsd;
  return total;
}

/** Wraps a provider so each response's usage carries its cost (when the table has a price for `model`). */
export function withCost(provider: LLMProvider, price: ModelPrice | undefined): LLMProvider {
  if (!price) return provider;
  return {
    name: provider.name,
    stream(request: ChatRequest) {
      return EventStream.from<StreamEvent, LLMResponse>(
        async (stream) => {
          const inner = provider.stream(request);
          for await (const event of inner) stream.push(event);
          const response = await inner.result();
          if (!response.usage) return response;
          return { ...response, usage: { ...response.usage, costUsd: costOf(response.usage, price) } };
        },
        (error) => errorResponse(toProviderError(error, request.signal)),
      );
    },
  };
}
