/**
 * OpenAI Codex (ChatGPT subscription): sign in with the authorization-code flow and PKCE. The browser comes back
 * to a callback server on 127.0.0.1; on a machine without a browser, the user opens the URL elsewhere and pastes
 * the address the browser lands on (or just the code) into the terminal. The access token is refreshed with the
 * refresh token five minutes before it expires.
 */
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { secretMatches } from '../../security/secrets.js';
import { parseJsonAs } from '../../util/json.js';
import { type CallbackServer, startCallbackServer } from './callback-server.js';
import { type CodexEndpoints, codexEndpoints } from './endpoints.js';
import { describeFailure, type Fetch, number, OAuthError, postForm, text } from './http.js';
import type { StoredToken, TokenStore } from './store.js';
import type { CredentialSource, OAuthCredentials } from './types.js';

export const CODEX_TOKEN_FILE = 'openai-codex.json';
const SCOPE = 'openid profile email offline_access';
const REFRESH_SKEW_MS = 5 * 60_000;
const LOGIN_TIMEOUT_MS = 10 * 60_000;
/** Where the ChatGPT account id sits in the access token's claims. */
const AUTH_CLAIM = 'https://api.openai.com/auth';

export interface BrowserLoginIO {
  print(line: string): void;
  fetch?: Fetch;
  /** Lines the user types or pastes (the redirect address or the code); absent when there is no terminal. */
  input?: AsyncIterable<string>;
  /** Opens the sign-in page in a browser, when there is one. */
  openBrowser?: (url: string) => void;
  signal?: AbortSignal;
  timeoutMs?: number;
  now?: () => number;
}

const base64url = (bytes: Buffer): string => bytes.toString('base64url');

/** A PKCE verifier with its S256 challenge, and the state that ties the callback to this sign-in. */
function pkce(): { verifier: string; challenge: string; state: string } {
  const verifier = base64url(randomBytes(32));
  return {
    verifier,
    challenge: base64url(createHash('sha256').update(verifier).digest()),
    state: base64url(randomBytes(16)),
  };
}

export async function loginOpenAICodex(
  store: TokenStore,
  env: Record<string, string | undefined>,
  io: BrowserLoginIO,
): Promise<StoredToken> {
  const endpoints = codexEndpoints(env);
  const { verifier, challenge, state } = pkce();

  let server: CallbackServer | undefined;
  try {
    server = await startCallbackServer(endpoints.callbackPort, endpoints.callbackPath, state);
  } catch (err) {
    io.print(`Could not listen on 127.0.0.1:${endpoints.callbackPort} (${(err as Error).message}).`);
    io.print('Finish in any browser, then paste the address it lands on here.');
  }
  const redirectUri = `http://localhost:${server?.port ?? endpoints.callbackPort}${endpoints.callbackPath}`;
  const url = authorizeUrl(endpoints, redirectUri, challenge, state);
  try {
    io.print('Open this address to sign in with your ChatGPT account:');
    io.print(`  ${url}`);
    io.print(
      'On a machine without a browser, open it anywhere, then paste the address the browser ends up on ' +
        `(${redirectUri}?code=…) or just the code here and press Enter.`,
    );
    io.openBrowser?.(url);
    const code = await waitForCode(server, io, state);
    const token = await exchangeCode(io.fetch ?? globalThis.fetch, endpoints, code, verifier, redirectUri, io.now);
    await store.write(CODEX_TOKEN_FILE, token);
    return token;
  } finally {
    await server?.close();
  }
}

/** A sign-in begun from somewhere without a terminal (the WebUI): the page to open and what finishing it needs. */
export interface CodexLoginFlow {
  authorizationUrl: string;
  redirectUri: string;
  state: string;
  verifier: string;
  /** Epoch ms after which the flow is refused. */
  expiresAt: number;
}

/**
 * Starts a sign-in whose browser lands on the registered callback address with nothing listening there: the user
 * pastes that address (or its code) back, and `completeOpenAICodexLogin` exchanges it.
 */
export function startOpenAICodexLogin(env: Record<string, string | undefined>, now = Date.now()): CodexLoginFlow {
  const endpoints = codexEndpoints(env);
  const { verifier, challenge, state } = pkce();
  const redirectUri = `http://localhost:${endpoints.callbackPort}${endpoints.callbackPath}`;
  return {
    authorizationUrl: authorizeUrl(endpoints, redirectUri, challenge, state),
    redirectUri,
    state,
    verifier,
    expiresAt: now + LOGIN_TIMEOUT_MS,
  };
}

/** Finishes a flow from `startOpenAICodexLogin` with what the user pasted; stores and returns the token. */
export async function completeOpenAICodexLogin(
  store: TokenStore,
  env: Record<string, string | undefined>,
  flow: CodexLoginFlow,
  pastedText: string,
  io: { fetch?: Fetch; now?: () => number } = {},
): Promise<StoredToken> {
  const pasted = parsePasted(pastedText);
  if (!pasted) throw new OAuthError('Paste the address the browser landed on (or its code).');
  if (pasted.error) throw new OAuthError(`The sign-in was not completed: ${pasted.error}.`);
  if (pasted.state !== undefined && !secretMatches(flow.state, pasted.state)) {
    throw new OAuthError('That address belongs to another sign-in; paste the one from this attempt.');
  }
  if (!pasted.code) throw new OAuthError('Paste the address the browser landed on (or its code).');
  const endpoints = codexEndpoints(env);
  const fetch = io.fetch ?? globalThis.fetch;
  const token = await exchangeCode(fetch, endpoints, pasted.code, flow.verifier, flow.redirectUri, io.now);
  await store.write(CODEX_TOKEN_FILE, token);
  return token;
}

function authorizeUrl(endpoints: CodexEndpoints, redirectUri: string, challenge: string, state: string): string {
  const url = new URL(endpoints.authorizeUrl);
  const params = {
    response_type: 'code',
    client_id: endpoints.clientId,
    redirect_uri: redirectUri,
    scope: SCOPE,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
    id_token_add_organizations: 'true',
    codex_cli_simplified_flow: 'true',
    originator: endpoints.originator,
  };
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url.toString();
}

/** The first of: the browser reaching the callback server, a pasted address or code, the timeout, an abort. */
async function waitForCode(server: CallbackServer | undefined, io: BrowserLoginIO, state: string): Promise<string> {
  const stop = new AbortController();
  const cleanup: (() => void)[] = [() => stop.abort()];
  try {
    const waits: Promise<string>[] = [];
    if (server) waits.push(server.code);
    if (io.input) waits.push(readPastedCode(io.input, state, io.print, stop.signal));
    waits.push(
      new Promise<string>((_, reject) => {
        const timer = setTimeout(
          () => reject(new OAuthError('The sign-in timed out.', 'Run the login again.')),
          io.timeoutMs ?? LOGIN_TIMEOUT_MS,
        );
        cleanup.push(() => clearTimeout(timer));
        const onAbort = () => reject(new OAuthError('Sign-in cancelled.'));
        io.signal?.addEventListener('abort', onAbort, { once: true });
        cleanup.push(() => io.signal?.removeEventListener('abort', onAbort));
      }),
    );
    return await Promise.race(waits);
  } finally {
    for (const done of cleanup) done();
  }
}

/** Reads pasted lines until one holds a code for this sign-in. Never settles when input ends without one. */
function readPastedCode(
  input: AsyncIterable<string>,
  state: string,
  print: (line: string) => void,
  stop: AbortSignal,
): Promise<string> {
  return new Promise((resolve, reject) => {
    void (async () => {
      for await (const line of input) {
        if (stop.aborted) return;
        const pasted = parsePasted(line);
        if (!pasted) continue;
        if (pasted.error) return reject(new OAuthError(`The sign-in was not completed: ${pasted.error}.`));
        if (pasted.state !== undefined && !secretMatches(state, pasted.state)) {
          print('That address belongs to another sign-in; paste the one from this attempt.');
          continue;
        }
        if (pasted.code) return resolve(pasted.code);
      }
    })().catch(() => undefined);
  });
}

interface Pasted {
  code?: string;
  state?: string;
  error?: string;
}

/** Accepts the full redirect address, its query string, `code#state`, or a bare code. */
export function parsePasted(line: string): Pasted | undefined {
  const value = line.trim();
  if (!value) return undefined;
  if (value.includes('code=') || value.includes('error=')) {
    const query = value.includes('?') ? value.slice(value.indexOf('?') + 1) : value;
    const params = new URLSearchParams(query.split('#')[0]);
    const error = params.get('error');
    if (error) return { error: params.get('error_description') ?? error };
    const code = params.get('code') ?? undefined;
    const state = params.get('state') ?? undefined;
    return code ? { code, ...(state !== undefined ? { state } : {}) } : undefined;
  }
  if (/\s/.test(value)) return undefined;
  const [code, state] = value.split('#', 2);
  return code ? { code, ...(state ? { state } : {}) } : undefined;
}

async function exchangeCode(
  fetch: Fetch,
  endpoints: CodexEndpoints,
  code: string,
  verifier: string,
  redirectUri: string,
  now: () => number = Date.now,
): Promise<StoredToken> {
  const reply = await postForm(fetch, endpoints.tokenUrl, {
    grant_type: 'authorization_code',
    client_id: endpoints.clientId,
    code,
    code_verifier: verifier,
    redirect_uri: redirectUri,
  });
  const access = text(reply.body, 'access_token');
  if (reply.status >= 400 || !access) {
    throw new OAuthError(`OpenAI did not accept the sign-in (${describeFailure(reply)}).`, 'Run the login again.');
  }
  return tokenFrom(reply.body, access, undefined, now);
}

function tokenFrom(
  body: Record<string, unknown>,
  access: string,
  previousRefresh: string | undefined,
  now: () => number,
): StoredToken {
  const refresh = text(body, 'refresh_token') ?? previousRefresh;
  const expiresIn = number(body, 'expires_in');
  const accountId = accountIdOf(access) ?? accountIdOf(text(body, 'id_token'));
  return {
    access,
    ...(refresh ? { refresh } : {}),
    ...(expiresIn ? { expiresAt: now() + expiresIn * 1000 } : {}),
    ...(accountId ? { accountId } : {}),
  };
}

const JwtClaims = z.looseObject({ [AUTH_CLAIM]: z.looseObject({ chatgpt_account_id: z.string().min(1) }) });

/** The ChatGPT account id from a JWT's claims; undefined for anything that is not such a token. */
export function accountIdOf(jwt: string | undefined): string | undefined {
  const payload = jwt?.split('.')[1];
  if (!payload) return undefined;
  const claims = parseJsonAs(Buffer.from(payload, 'base64url').toString('utf8'), JwtClaims, 'JWT claims');
  return claims.ok ? claims.value[AUTH_CLAIM].chatgpt_account_id : undefined;
}

/** The credentials of each request: the stored access token, refreshed before it expires. */
export class CodexCredentials implements CredentialSource {
  private current?: StoredToken;
  private pending?: Promise<StoredToken>;
  private stale = false;
  private readonly endpoints: CodexEndpoints;

  constructor(
    private readonly store: TokenStore,
    env: Record<string, string | undefined>,
    private readonly fetch: Fetch = globalThis.fetch,
    private readonly now: () => number = Date.now,
  ) {
    this.endpoints = codexEndpoints(env);
  }

  async get(): Promise<OAuthCredentials> {
    this.pending ??= this.fresh().finally(() => {
      this.pending = undefined;
    });
    const token = await this.pending;
    return {
      apiKey: token.access,
      headers: {
        originator: this.endpoints.originator,
        'OpenAI-Beta': 'responses=experimental',
        ...(token.accountId ? { 'chatgpt-account-id': token.accountId } : {}),
      },
    };
  }

  invalidate(): void {
    this.stale = true;
  }

  private async fresh(): Promise<StoredToken> {
    this.current ??= await this.store.read(CODEX_TOKEN_FILE);
    const token = this.current;
    if (!token) {
      throw new OAuthError('OpenAI Codex is not signed in.', 'Run `nanobot provider login openai-codex` first.');
    }
    const expiring = token.expiresAt !== undefined && this.now() >= token.expiresAt - REFRESH_SKEW_MS;
    if (!expiring && !this.stale) return token;
    if (!token.refresh) {
      throw new OAuthError('The OpenAI Codex sign-in has expired.', 'Run `nanobot provider login openai-codex`.');
    }
    const reply = await postForm(this.fetch, this.endpoints.tokenUrl, {
      grant_type: 'refresh_token',
      client_id: this.endpoints.clientId,
      refresh_token: token.refresh,
      scope: 'openid profile email',
    });
    const access = text(reply.body, 'access_token');
    if (reply.status >= 400 || !access) {
      throw new OAuthError(
        `Could not renew the OpenAI Codex sign-in (${describeFailure(reply)}).`,
        'Run `nanobot provider login openai-codex`.',
      );
    }
    const renewed = tokenFrom(reply.body, access, token.refresh, this.now);
    if (!renewed.accountId && token.accountId) renewed.accountId = token.accountId;
    await this.store.write(CODEX_TOKEN_FILE, renewed);
    this.current = renewed;
    this.stale = false;
    return renewed;
  }
}
