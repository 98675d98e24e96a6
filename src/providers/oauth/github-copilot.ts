/**
 * GitHub Copilot: sign in with GitHub's device flow (a code typed at github.com/login/device), keep the GitHub
 * token, and exchange it for the short-lived Copilot token each chat request needs (renewed a minute before expiry).
 */
import { COPILOT_HEADERS } from '../registry.js';
import type { SleepFn } from '../retry.js';
import { type CopilotEndpoints, copilotEndpoints } from './endpoints.js';
import { describeFailure, type Fetch, getJson, number, OAuthError, postForm, text } from './http.js';
import type { StoredToken, TokenStore } from './store.js';
import type { CredentialSource, OAuthCredentials } from './types.js';

export const COPILOT_TOKEN_FILE = 'github-copilot.json';
const SCOPE = 'read:user';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** Renew the Copilot token this long before it expires. */
const EXPIRY_SKEW_MS = 60_000;
const NOT_SIGNED_IN = new OAuthError(
  'GitHub Copilot is not signed in.',
  'Run `nanobot provider login github-copilot` first.',
);

export interface DeviceLoginIO {
  print(line: string): void;
  fetch?: Fetch;
  sleep?: SleepFn;
  now?: () => number;
  signal?: AbortSignal;
}

/** A device sign-in under way: the code the user enters at `verificationUri`, and when to ask GitHub again. */
export interface CopilotDeviceFlow {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  intervalMs: number;
  /** Epoch ms when the code expires. */
  expiresAt: number;
}

interface FlowIO {
  fetch?: Fetch;
  now?: () => number;
}

/** Asks GitHub for a device code (the first step of `nanobot provider login github-copilot`). */
export async function startGitHubCopilotLogin(
  env: Record<string, string | undefined>,
  io: FlowIO = {},
): Promise<CopilotDeviceFlow> {
  const endpoints = copilotEndpoints(env);
  const now = io.now ?? Date.now;
  const device = await postForm(io.fetch ?? globalThis.fetch, endpoints.deviceCodeUrl, {
    client_id: endpoints.clientId,
    scope: SCOPE,
  });
  const deviceCode = text(device.body, 'device_code');
  const userCode = text(device.body, 'user_code');
  if (device.status >= 400 || !deviceCode || !userCode) {
    throw new OAuthError(`GitHub did not start the sign-in (${describeFailure(device)}).`);
  }
  return {
    deviceCode,
    userCode,
    verificationUri: text(device.body, 'verification_uri') ?? 'https://github.com/login/device',
    intervalMs: Math.max(1, number(device.body, 'interval') ?? 5) * 1000,
    expiresAt: now() + (number(device.body, 'expires_in') ?? 900) * 1000,
  };
}

/**
 * Asks GitHub once whether the code was approved. Undefined while it is pending (`flow.intervalMs` grows when
 * GitHub says to slow down); once approved, checks the account has Copilot and stores the token.
 */
export async function pollGitHubCopilotLogin(
  store: TokenStore,
  env: Record<string, string | undefined>,
  flow: CopilotDeviceFlow,
  io: FlowIO = {},
): Promise<StoredToken | undefined> {
  const endpoints = copilotEndpoints(env);
  const fetch = io.fetch ?? globalThis.fetch;
  const now = io.now ?? Date.now;
  if (now() >= flow.expiresAt)
    throw new OAuthError('The GitHub code expired before it was approved.', 'Run the login again.');
  const poll = await postForm(fetch, endpoints.accessTokenUrl, {
    client_id: endpoints.clientId,
    device_code: flow.deviceCode,
    grant_type: DEVICE_GRANT,
  });
  const githubToken = text(poll.body, 'access_token');
  if (!githubToken) {
    const error = text(poll.body, 'error');
    if (error === 'authorization_pending') return undefined;
    if (error === 'slow_down') {
      flow.intervalMs += 5000;
      return undefined;
    }
    if (error === 'expired_token') throw new OAuthError('The GitHub code expired.', 'Run the login again.');
    if (error === 'access_denied') throw new OAuthError('The GitHub sign-in was denied.');
    throw new OAuthError(`GitHub sign-in failed (${describeFailure(poll)}).`);
  }
  const expiresIn = number(poll.body, 'expires_in');
  const user = await getJson(fetch, endpoints.userUrl, {
    Authorization: `Bearer ${githubToken}`,
    'User-Agent': COPILOT_HEADERS['User-Agent'] ?? 'nanobot',
  });
  const login = text(user.body, 'login');
  // Fail now, not at the first chat, when the account has no Copilot subscription.
  await exchangeCopilotToken(fetch, endpoints, githubToken);
  const token: StoredToken = {
    access: githubToken,
    ...(expiresIn ? { expiresAt: now() + expiresIn * 1000 } : {}),
    ...(login ? { accountId: login } : {}),
  };
  await store.write(COPILOT_TOKEN_FILE, token);
  return token;
}

/** Runs the device flow, checks the account has Copilot, and stores the GitHub token. */
export async function loginGitHubCopilot(
  store: TokenStore,
  env: Record<string, string | undefined>,
  io: DeviceLoginIO,
): Promise<StoredToken> {
  const sleep = io.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const flowIO = { ...(io.fetch ? { fetch: io.fetch } : {}), ...(io.now ? { now: io.now } : {}) };
  const flow = await startGitHubCopilotLogin(env, flowIO);
  io.print(`Open ${flow.verificationUri} and enter the code ${flow.userCode}`);
  io.print('Waiting for you to approve the sign-in…');
  for (;;) {
    if (io.signal?.aborted) throw new OAuthError('GitHub sign-in cancelled.');
    await sleep(flow.intervalMs, io.signal);
    const token = await pollGitHubCopilotLogin(store, env, flow, flowIO);
    if (token) return token;
  }
}

interface CopilotToken {
  token: string;
  expiresAt: number;
  /** The chat API this account must use (business and enterprise accounts have their own). */
  apiBase?: string;
}

async function exchangeCopilotToken(
  fetch: Fetch,
  endpoints: CopilotEndpoints,
  githubToken: string,
  now = Date.now,
): Promise<CopilotToken> {
  const reply = await getJson(fetch, endpoints.copilotTokenUrl, {
    ...COPILOT_HEADERS,
    Authorization: `token ${githubToken}`,
  });
  const token = text(reply.body, 'token');
  if (reply.status === 401) {
    throw new OAuthError(
      'GitHub no longer accepts the stored sign-in.',
      'Run `nanobot provider login github-copilot`.',
    );
  }
  if (reply.status === 403 || reply.status === 404) {
    throw new OAuthError(
      `This GitHub account cannot use Copilot (${describeFailure(reply)}).`,
      'Check the Copilot subscription at github.com/settings/copilot.',
    );
  }
  if (reply.status >= 400 || !token) {
    throw new OAuthError(`The Copilot token exchange failed (${describeFailure(reply)}).`);
  }
  const expiresAtSeconds = number(reply.body, 'expires_at');
  const refreshIn = number(reply.body, 'refresh_in') ?? 1500;
  const endpointsBody = reply.body.endpoints;
  const apiBase =
    typeof endpointsBody === 'object' && endpointsBody !== null
      ? text(endpointsBody as Record<string, unknown>, 'api')
      : undefined;
  return {
    token,
    expiresAt: expiresAtSeconds ? expiresAtSeconds * 1000 : now() + refreshIn * 1000,
    ...(apiBase ? { apiBase } : {}),
  };
}

/** The credentials of each chat request: the stored GitHub token exchanged for a fresh Copilot token. */
export class CopilotCredentials implements CredentialSource {
  private current?: CopilotToken;
  private pending?: Promise<CopilotToken>;
  private readonly endpoints: CopilotEndpoints;

  constructor(
    private readonly store: TokenStore,
    env: Record<string, string | undefined>,
    private readonly fetch: Fetch = globalThis.fetch,
    private readonly now: () => number = Date.now,
  ) {
    this.endpoints = copilotEndpoints(env);
  }

  async get(): Promise<OAuthCredentials> {
    let token = this.current;
    if (!token || this.now() >= token.expiresAt - EXPIRY_SKEW_MS) {
      // One exchange at a time: parallel requests (subagents) share it.
      this.pending ??= this.exchange().finally(() => {
        this.pending = undefined;
      });
      token = await this.pending;
    }
    const apiBase = this.endpoints.chatBaseUrl ?? token.apiBase;
    return { apiKey: token.token, headers: { ...COPILOT_HEADERS }, ...(apiBase ? { apiBase } : {}) };
  }

  invalidate(): void {
    this.current = undefined;
  }

  private async exchange(): Promise<CopilotToken> {
    const stored = await this.store.read(COPILOT_TOKEN_FILE);
    if (!stored) throw NOT_SIGNED_IN;
    this.current = await exchangeCopilotToken(this.fetch, this.endpoints, stored.access, this.now);
    return this.current;
  }
}
