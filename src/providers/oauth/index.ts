/**
 * The providers that sign in with OAuth instead of an API key (`nanobot provider login <name>`), and the wrapper
 * that gives their wire adapter fresh credentials for every request.
 */
import { join } from 'node:path';
import { errorMessage } from '../../util/errors.js';
import { EventStream } from '../../util/event-stream.js';
import { toProviderError } from '../errors.js';
import type { ProviderOptions } from '../options.js';
import { normalizeProviderName } from '../registry.js';
import type { ResolvedProvider } from '../resolve.js';
import { errorResponse } from '../retry.js';
import type { ChatRequest, LLMProvider, LLMResponse, StreamEvent } from '../types.js';
import { COPILOT_TOKEN_FILE, CopilotCredentials, loginGitHubCopilot } from './github-copilot.js';
import { OAuthError } from './http.js';
import { CODEX_TOKEN_FILE, CodexCredentials, loginOpenAICodex } from './openai-codex.js';
import { type StoredToken, TokenStore } from './store.js';
import type { CredentialSource, OAuthCredentials } from './types.js';

export { OAuthError } from './http.js';
export { type StoredToken, TokenStore } from './store.js';

export interface OAuthProviderDef {
  /** Registry name. */
  name: 'github_copilot' | 'openai_codex';
  /** The spelling on the command line (`nanobot provider login github-copilot`). */
  cliName: string;
  label: string;
  tokenFile: string;
  /** A model to suggest with `--set-main` when none is given. */
  defaultModel: string;
  credentials(store: TokenStore, env: Env, fetch?: typeof globalThis.fetch): CredentialSource;
  /** How requests differ from the registry entry once signed in (Codex speaks the Responses API under /codex). */
  adapt?(resolved: ResolvedProvider): ResolvedProvider;
}

type Env = Record<string, string | undefined>;

export const OAUTH_PROVIDERS: readonly OAuthProviderDef[] = [
  {
    name: 'github_copilot',
    cliName: 'github-copilot',
    label: 'GitHub Copilot',
    tokenFile: COPILOT_TOKEN_FILE,
    defaultModel: 'github-copilot/gpt-4.1',
    credentials: (store, env, fetch) => new CopilotCredentials(store, env, fetch),
  },
  {
    name: 'openai_codex',
    cliName: 'openai-codex',
    label: 'OpenAI Codex',
    tokenFile: CODEX_TOKEN_FILE,
    defaultModel: 'openai-codex/gpt-5.1-codex',
    credentials: (store, env, fetch) => new CodexCredentials(store, env, fetch),
    adapt: (resolved) => ({
      ...resolved,
      apiBase: resolved.apiBase.replace(/\/+$/, '').replace(/(?<!\/codex)$/, '/codex'),
      settings: { ...resolved.settings, apiType: 'responses' },
    }),
  },
];

export const loginFunctions = { github_copilot: loginGitHubCopilot, openai_codex: loginOpenAICodex } as const;

export function findOAuthProvider(name: string): OAuthProviderDef | undefined {
  const wanted = normalizeProviderName(name);
  return OAUTH_PROVIDERS.find((def) => def.name === wanted);
}

/** The stored sign-in of a provider, for `nanobot status` / `doctor`. */
export async function oauthStatus(authDir: string, def: OAuthProviderDef): Promise<StoredToken | undefined> {
  return new TokenStore(authDir).read(def.tokenFile);
}

/**
 * An LLMProvider for an OAuth provider: before each request it asks for credentials (refreshing them when they
 * are about to expire) and uses an adapter built for them; a rejected token is renewed and the request tried once
 * more, as long as nothing has streamed yet.
 */
export function createOAuthProvider(
  resolved: ResolvedProvider,
  opts: ProviderOptions,
  makeAdapter: (resolved: ResolvedProvider) => Promise<LLMProvider>,
): LLMProvider {
  const def = findOAuthProvider(resolved.spec.name);
  if (!def) throw new Error(`${resolved.name} is not an OAuth provider`);
  const env = opts.oauth?.env ?? {};
  const authDir = opts.oauth?.authDir ?? join(env.HOME ?? '.', '.nanobot', 'auth');
  const source = def.credentials(new TokenStore(authDir), env, opts.fetch);
  const adapters = new Map<string, Promise<LLMProvider>>();
  const adapterFor = (credentials: OAuthCredentials): Promise<LLMProvider> => {
    const apiBase = resolved.settings.apiBase ?? credentials.apiBase ?? resolved.apiBase;
    const key = `${credentials.apiKey}\u0000${apiBase}\u0000${JSON.stringify(credentials.headers)}`;
    let adapter = adapters.get(key);
    if (!adapter) {
      adapters.clear(); // an old token is of no further use
      const signedIn: ResolvedProvider = {
        ...resolved,
        apiKey: credentials.apiKey,
        apiBase,
        settings: {
          ...resolved.settings,
          extraHeaders: { ...credentials.headers, ...resolved.settings.extraHeaders },
        },
      };
      adapter = makeAdapter(def.adapt ? def.adapt(signedIn) : signedIn);
      adapters.set(key, adapter);
    }
    return adapter;
  };
  return {
    name: resolved.name,
    stream(request: ChatRequest) {
      return EventStream.from<StreamEvent, LLMResponse>(
        async (stream) => {
          for (let attempt = 1; ; attempt++) {
            let credentials: OAuthCredentials;
            try {
              credentials = await source.get();
            } catch (err) {
              const hint = err instanceof OAuthError && err.hint ? ` ${err.hint}` : '';
              return errorResponse({ kind: 'auth', message: `${errorMessage(err)}${hint}`, retryable: false });
            }
            const inner = (await adapterFor(credentials)).stream(request);
            let streamed = false;
            for await (const event of inner) {
              if (event.type !== 'retry-wait') streamed = true;
              stream.push(event);
            }
            const response = await inner.result();
            if (response.error?.kind !== 'auth' || streamed || attempt > 1) return response;
            source.invalidate();
          }
        },
        (error) => errorResponse(toProviderError(error, request.signal)),
      );
    },
  };
}
