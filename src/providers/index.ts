/**
 * Entry point of the providers layer: resolve a provider for a model, then create it.
 * The wire adapters (and their SDKs, ~300 ms to import) load on the first request, so commands that never call
 * a model (`nanobot status`, `--help`) do not pay for them.
 */
import { EventStream } from '../util/event-stream.js';
import { toProviderError } from './errors.js';
import type { ProviderOptions } from './options.js';
import type { ResolvedProvider } from './resolve.js';
import { errorResponse } from './retry.js';
import type { ChatRequest, LLMProvider, LLMResponse, StreamEvent } from './types.js';

export { providerErrorFromStatus, toProviderError } from './errors.js';
export type { ProviderOptions } from './options.js';
export {
  customSpec,
  findSpec,
  normalizeProviderName,
  PROVIDERS,
  type ProviderKind,
  type ProviderSpec,
  upstreamModelName,
  type WireApi,
} from './registry.js';
export {
  isResolveError,
  type ProviderSettings,
  type ResolvedProvider,
  type ResolveError,
  type ResolveInput,
  resolveProvider,
} from './resolve.js';
export type { SleepFn } from './retry.js';

export function createProvider(resolved: ResolvedProvider, opts: ProviderOptions = {}): LLMProvider {
  let adapter: Promise<LLMProvider> | undefined;
  const load = async (): Promise<LLMProvider> => {
    if (resolved.spec.unsupported) return unsupportedProvider(resolved);
    const proxied = await withProxy(resolved, opts);
    if ('error' in proxied) return failingProvider(resolved, proxied.error);
    if (resolved.spec.kind === 'oauth') {
      // Signed-in providers get fresh credentials per request; the wire adapter is the usual one.
      const { createOAuthProvider } = await import('./oauth/index.js');
      return createOAuthProvider(resolved, proxied, (signedIn) => wireAdapter(signedIn, proxied));
    }
    return wireAdapter(resolved, proxied);
  };
  return {
    name: resolved.name,
    stream(request: ChatRequest) {
      return EventStream.from<StreamEvent, LLMResponse>(
        async (stream) => {
          adapter ??= load();
          const inner = (await adapter).stream(request);
          for await (const event of inner) stream.push(event);
          return inner.result();
        },
        (error) => errorResponse(toProviderError(error, request.signal)),
      );
    },
  };
}

async function wireAdapter(resolved: ResolvedProvider, opts: ProviderOptions): Promise<LLMProvider> {
  if (resolved.wire === 'bedrock') {
    const { createBedrockProvider } = await import('./bedrock.js');
    return createBedrockProvider(resolved, opts);
  }
  if (resolved.wire === 'anthropic') {
    const { createAnthropicProvider } = await import('./anthropic.js');
    return createAnthropicProvider(resolved, opts);
  }
  const { createOpenAICompatProvider } = await import('./openai-compat.js');
  return createOpenAICompatProvider(resolved, opts);
}

/**
 * `providers.<name>.proxy`: every request of this provider (and its OAuth token calls) goes through the proxy. The
 * AWS SDK under Bedrock does not use our fetch, so a proxy there is refused rather than ignored (nanobot refuses it too).
 */
async function withProxy(
  resolved: ResolvedProvider,
  opts: ProviderOptions,
): Promise<ProviderOptions | { error: string }> {
  const raw = resolved.settings.proxy;
  if (typeof raw !== 'string' || !raw.trim() || opts.fetch) return opts;
  const key = `providers.${resolved.name}.proxy`;
  if (resolved.wire === 'bedrock')
    return { error: `${key} is not supported for Bedrock; remove it (the AWS SDK reads HTTPS_PROXY)` };
  const { parseProxyUrl, proxiedFetch } = await import('../security/proxy.js');
  const parsed = parseProxyUrl(raw, key);
  if (!parsed.ok) return { error: parsed.reason };
  return { ...opts, fetch: await proxiedFetch(parsed.url) };
}

/** resolveProvider refuses these, but a hand-built ResolvedProvider must still fail as data, not a crash. */
function unsupportedProvider(resolved: ResolvedProvider): LLMProvider {
  return failingProvider(
    resolved,
    `Provider "${resolved.name}" is not supported yet: ${resolved.spec.unsupported ?? ''}`,
  );
}

/** A provider that answers every request with the same configuration error. */
function failingProvider(resolved: ResolvedProvider, message: string): LLMProvider {
  return {
    name: resolved.name,
    stream: () =>
      EventStream.from<StreamEvent, LLMResponse>(
        async () => errorResponse({ kind: 'bad_request', message, retryable: false }),
        (error) => errorResponse(toProviderError(error)),
      ),
  };
}
