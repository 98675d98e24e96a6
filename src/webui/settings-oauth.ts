/**
 * Signing in to subscription providers from the WebUI (nanobot's `settings.provider.oauth_*`), with the same code
 * and token files as `nanobot provider login`. OpenAI Codex: the browser signs in and lands on the registered
 * callback address; the user pastes that address back (`oauth_complete`). GitHub Copilot: the device flow's code
 * comes back as `user_code` with `verification_uri` (members nanobot's dialog does not know: it shows the link), and
 * each `oauth_complete` asks GitHub once, at most as often as GitHub allows, answering `pending` until approved.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  type CopilotDeviceFlow,
  pollGitHubCopilotLogin,
  startGitHubCopilotLogin,
} from '../providers/oauth/github-copilot.js';
import { findOAuthProvider, OAuthError, TokenStore } from '../providers/oauth/index.js';
import {
  type CodexLoginFlow,
  completeOpenAICodexLogin,
  startOpenAICodexLogin,
} from '../providers/oauth/openai-codex.js';
import { errorMessage } from '../util/errors.js';
import type { ActionHandler, WebuiApiContext } from './api.js';
import { WebuiApiError } from './api.js';
import { has, optionalBool, optionalText, requiredText } from './settings-input.js';
import { oauthStates } from './settings-providers.js';
import { answer, configOf } from './settings-write.js';

/** Sign-ins begun and not finished, by flow id; the oldest goes when a ninth starts. */
const MAX_FLOWS = 8;
type Flow =
  | { provider: 'openai_codex'; flow: CodexLoginFlow }
  | { provider: 'github_copilot'; flow: CopilotDeviceFlow; nextPollAt: number };
const flows = new Map<string, Flow>();

function register(entry: Flow, now: number): string {
  for (const [id, entry] of flows) if (entry.flow.expiresAt <= now) flows.delete(id);
  while (flows.size >= MAX_FLOWS) flows.delete(flows.keys().next().value as string);
  const id = randomBytes(24).toString('base64url');
  flows.set(id, entry);
  return id;
}

function clearFlows(provider: string): void {
  for (const [id, entry] of flows) if (entry.provider === provider) flows.delete(id);
}

function oauthProvider(name: string) {
  const def = findOAuthProvider(name);
  if (!def) throw new WebuiApiError(400, 'unknown OAuth provider');
  return def;
}

const tokenStore = (context: WebuiApiContext) =>
  new TokenStore(join(configOf(context).loaded().dataDir, 'auth'), () => undefined);

const login: ActionHandler = async (context, payload) => {
  const def = oauthProvider(requiredText(payload, 'provider', 'provider is required'));
  if (has(payload, 'remote_browser')) optionalBool(payload, 'remote_browser'); // same flow either way: paste back
  if (def.name === 'github_copilot') {
    const signedIn = (await oauthStates(configOf(context).loaded())).get(def.name)?.configured;
    if (signedIn) return answer(context);
    let device: CopilotDeviceFlow;
    try {
      device = await startGitHubCopilotLogin(process.env);
    } catch (error) {
      throw new WebuiApiError(502, `${def.label} OAuth login failed: ${errorMessage(error)}`);
    }
    const now = Date.now();
    const flowId = register({ provider: def.name, flow: device, nextPollAt: now + device.intervalMs }, now);
    return {
      status: 'authorization_required',
      provider: def.name,
      flow_id: flowId,
      authorization_url: device.verificationUri,
      expires_in: Math.round((device.expiresAt - now) / 1000),
      completion_input: 'authorization_code',
      user_code: device.userCode,
      verification_uri: device.verificationUri,
    };
  }
  const now = Date.now();
  const flow = startOpenAICodexLogin(process.env, now);
  const flowId = register({ provider: def.name, flow }, now);
  return {
    status: 'authorization_required',
    provider: def.name,
    flow_id: flowId,
    authorization_url: flow.authorizationUrl,
    expires_in: Math.round((flow.expiresAt - now) / 1000),
    completion_input: 'callback_url',
  };
};

const complete: ActionHandler = async (context, payload) => {
  const name = requiredText(payload, 'provider', 'provider is required');
  const def = findOAuthProvider(name);
  if (!def) throw new WebuiApiError(400, 'OAuth completion is not supported for this provider');
  const flowId = requiredText(payload, 'flow_id', 'flow_id is required');
  const entry = flows.get(flowId);
  const now = Date.now();
  if (!entry || entry.provider !== def.name || entry.flow.expiresAt <= now) {
    if (entry?.provider === def.name) flows.delete(flowId);
    throw new WebuiApiError(410, `${def.label} sign-in expired. Start again.`);
  }
  const pending = { status: 'pending', provider: def.name, flow_id: flowId };
  if (entry.provider === 'github_copilot') {
    if (now < entry.nextPollAt) return pending; // GitHub refuses polls faster than its interval
    let token: Awaited<ReturnType<typeof pollGitHubCopilotLogin>>;
    try {
      token = await pollGitHubCopilotLogin(tokenStore(context), process.env, entry.flow);
    } catch (error) {
      flows.delete(flowId);
      if (error instanceof OAuthError) throw new WebuiApiError(400, error.message);
      throw new WebuiApiError(502, `${def.label} OAuth login failed: ${errorMessage(error)}`);
    }
    if (!token) {
      entry.nextPollAt = Date.now() + entry.flow.intervalMs;
      return pending;
    }
    flows.delete(flowId);
    return answer(context);
  }
  const pasted = optionalText(payload, 'authorization_response');
  if (!pasted) return pending;
  if (pasted.length > 8192) throw new WebuiApiError(400, 'The OAuth callback URL is too long');
  try {
    await completeOpenAICodexLogin(tokenStore(context), process.env, entry.flow, pasted);
  } catch (error) {
    // A paste that is not this sign-in's can be corrected; a refused exchange means starting again.
    if (error instanceof OAuthError && !/did not accept/.test(error.message))
      throw new WebuiApiError(400, error.message);
    flows.delete(flowId);
    throw new WebuiApiError(502, `${def.label} OAuth login failed: ${errorMessage(error)}`);
  }
  flows.delete(flowId);
  return answer(context);
};

const logout: ActionHandler = async (context, payload) => {
  const def = oauthProvider(requiredText(payload, 'provider', 'provider is required'));
  clearFlows(def.name);
  await tokenStore(context).remove(def.tokenFile);
  return answer(context);
};

export const oauthActions: Record<string, ActionHandler> = {
  'settings.provider.oauth_login': login,
  'settings.provider.oauth_complete': complete,
  'settings.provider.oauth_logout': logout,
};
