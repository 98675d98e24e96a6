/**
 * Scan to create a bot (`nanobot channels login feishu`, and Connect in the WebUI), upstream's device-code flow:
 * form posts to `<accounts>/oauth/v1/app/registration` — `init` (the server must offer `client_secret`), `begin`
 * (a device code and the login URL shown as a QR code), then `poll` every `interval` seconds until the person
 * confirms in the Feishu or Lark app and the answer carries the new app's `client_id` / `client_secret`. Those are
 * saved into the instance's block of `channels.feishu` (enabled, with upstream's `identityKey`), where the gateway
 * picks them up and starts the bot without a restart.
 *
 * The answers are not trusted: the login URL must be https on Feishu's or Lark's own domains (or the accounts
 * server itself), redirects are not followed, and the credentials must look like an App ID and a secret, since
 * the secret is sent to the Open Platform afterwards.
 */
import { join } from 'node:path';
import { checkSecureUrl } from '../../security/hosts.js';
import { errorMessage, UserError } from '../../util/errors.js';
import { DEFAULT_INSTANCE, INSTANCE_ID, type LoginContext, runtimeName } from '../definition.js';
import { PairingStore } from '../pairing.js';
import { APP_ID, apiRoot, type FeishuSettings } from './index.js';
import { appIdentity, feishuInstances } from './instances.js';

export const ACCOUNTS_ROOTS = { feishu: 'https://accounts.feishu.cn', lark: 'https://accounts.larksuite.com' };
const REGISTRATION_PATH = '/oauth/v1/app/registration';
const REQUEST_TIMEOUT_MS = 10_000;
const SECRET = /^[\x21-\x7e]{8,256}$/;
const DEVICE_CODE = /^[\x21-\x7e]{1,1024}$/;
/** Feishu's and Lark's own domains, the only places a login URL may send the person (besides the accounts server). */
const OWN_DOMAINS = ['feishu.cn', 'larksuite.com', 'larkoffice.com', 'feishu.net', 'larksuite-boe.com'];

export interface RegistrationResult {
  appId: string;
  appSecret: string;
  /** `lark` when the person's tenant is on Lark (the answer's `user_info.tenant_brand`). */
  brand: 'feishu' | 'lark';
}

export interface LoginOptions {
  fetch?: typeof fetch;
  /** Overrides the server's `interval` between polls (tests). */
  pollIntervalMs?: number;
}

type Answer = Record<string, unknown>;

/** The accounts server for `domain`: Feishu's or Lark's, or (a self-hosted or test platform) the domain URL itself. */
export function accountsRoot(domain: string): string {
  const value = domain.trim();
  if (value === '' || value === 'feishu') return ACCOUNTS_ROOTS.feishu;
  if (value === 'lark') return ACCOUNTS_ROOTS.lark;
  return apiRoot(value);
}

/** The login URL, when it is https on Feishu's or Lark's own domains or on the accounts server's origin. */
export function safeLoginUrl(value: unknown, root: string): string | undefined {
  if (typeof value !== 'string' || value.length > 4096) return undefined;
  const checked = checkSecureUrl(value);
  if ('error' in checked || checked.url.username || checked.url.password) return undefined;
  const { url } = checked;
  if (url.origin === new URL(root).origin) return value;
  const own = OWN_DOMAINS.some((domain) => url.hostname === domain || url.hostname.endsWith(`.${domain}`));
  return url.protocol === 'https:' && own ? value : undefined;
}

async function post(root: string, body: Record<string, string>, context: LoginContext, options: LoginOptions) {
  const signals = [AbortSignal.timeout(REQUEST_TIMEOUT_MS), ...(context.signal ? [context.signal] : [])];
  const res = await (options.fetch ?? fetch)(`${root}${REGISTRATION_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(body).toString(),
    redirect: 'error',
    signal: AbortSignal.any(signals),
  });
  // Feishu answers JSON on errors too (a pending poll is a 400 with `authorization_pending`).
  const text = await res.text();
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Answer;
  } catch {
    // not JSON: said below
  }
  throw new Error(`the registration server answered HTTP ${res.status} without JSON`);
}

function whole(value: unknown, fallback: number, min: number, max: number): number {
  return typeof value === 'number' && Number.isInteger(value) ? Math.min(max, Math.max(min, value)) : fallback;
}

/** Runs the device-code flow against the accounts server of `domain`; resolves with the new app's credentials. */
export async function register(
  domain: string,
  context: LoginContext,
  options: LoginOptions = {},
): Promise<RegistrationResult> {
  const root = accountsRoot(domain);
  const cancelled = () => new UserError('Feishu / Lark login cancelled.');
  let begun: Answer;
  try {
    const init = await post(root, { action: 'init' }, context, options);
    const methods = Array.isArray(init.supported_auth_methods) ? init.supported_auth_methods : [];
    if (!methods.includes('client_secret')) {
      throw new UserError(
        `The Feishu / Lark registration server does not offer client_secret apps (it offers ${JSON.stringify(methods).slice(0, 200)}).`,
        'Create the app by hand at open.feishu.cn/app and put its App ID and App Secret in channels.feishu.',
      );
    }
    begun = await post(
      root,
      { action: 'begin', archetype: 'PersonalAgent', auth_method: 'client_secret', request_user_info: 'open_id' },
      context,
      options,
    );
  } catch (err) {
    if (context.signal?.aborted) throw cancelled();
    if (err instanceof UserError) throw err;
    throw new UserError(
      `Unable to start the Feishu / Lark login: ${errorMessage(err)}`,
      'Check the network (and channels.feishu.domain), then try again.',
    );
  }
  const deviceCode = begun.device_code;
  if (typeof deviceCode !== 'string' || !DEVICE_CODE.test(deviceCode)) {
    throw new UserError('The Feishu / Lark registration server sent no device code.', 'Try the login again.');
  }
  const loginUrl = safeLoginUrl(begun.verification_uri_complete, root);
  if (!loginUrl) {
    throw new UserError(
      'The Feishu / Lark registration server sent a login URL outside Feishu and Lark; it is not shown.',
      'Try again later, or create the app by hand at open.feishu.cn/app.',
    );
  }
  let intervalMs = options.pollIntervalMs ?? whole(begun.interval, 5, 1, 60) * 1000;
  const deadline = Date.now() + whole(begun.expire_in, 600, 10, 1800) * 1000;
  context.qr?.(loginUrl);
  context.out('Scan this code with the Feishu or Lark app on your phone, then confirm; nanobot creates the bot.\n');

  let brand: 'feishu' | 'lark' = domain.trim() === 'lark' ? 'lark' : 'feishu';
  while (Date.now() < deadline) {
    await pause(intervalMs, context.signal);
    if (context.signal?.aborted) throw cancelled();
    let answer: Answer;
    try {
      answer = await post(root, { action: 'poll', device_code: deviceCode, tp: 'ob_app' }, context, options);
    } catch {
      if (context.signal?.aborted) throw cancelled();
      continue; // a passing network failure: poll again, as upstream does
    }
    const user = answer.user_info;
    if (typeof user === 'object' && user !== null && (user as Answer).tenant_brand === 'lark') brand = 'lark';
    if (answer.client_id !== undefined || answer.client_secret !== undefined) {
      const appId = answer.client_id;
      const appSecret = answer.client_secret;
      if (
        typeof appId !== 'string' ||
        !APP_ID.test(appId) ||
        typeof appSecret !== 'string' ||
        !SECRET.test(appSecret)
      ) {
        throw new UserError(
          'The Feishu / Lark registration server sent credentials that are not an App ID and App Secret; nothing was saved.',
          'Try the login again.',
        );
      }
      return { appId, appSecret, brand };
    }
    if (answer.error === 'access_denied' || answer.error === 'expired_token') {
      throw new UserError(
        answer.error === 'access_denied' ? 'The login was declined in Feishu / Lark.' : 'The login code expired.',
        'Run `nanobot channels login feishu` again (or Connect in the WebUI).',
      );
    }
    if (answer.error === 'slow_down') intervalMs = Math.min(60_000, intervalMs + 5_000);
  }
  throw new UserError('The Feishu / Lark login timed out before it was confirmed.', 'Start it again.');
}

/**
 * Saves a registration into `raw` (config.json's tree) for instance `instance`; an app already saved in another
 * instance is updated there instead (upstream's rule). Returns the instance written and whether its app changed
 * (then its allowFrom is emptied: the people approved for the old bot are not approved for the new one).
 */
export function saveRegistration(
  raw: Record<string, unknown>,
  instance: string,
  result: RegistrationResult,
): { instance: string; appChanged: boolean } {
  const channels = objectAt(raw, 'channels');
  const section = objectAt(channels, 'feishu');
  const { instances } = feishuInstances.list(section);
  const appOf = (block: Record<string, unknown>) => appIdentity(block.appId ?? block.app_id, block.domain);
  const current = feishuInstances.block(section, instance);
  // A domain URL (a self-hosted or test platform) stays; otherwise the tenant's brand decides.
  const urlDomain = typeof current.domain === 'string' && /^https?:/i.test(current.domain.trim());
  const domain = urlDomain ? String(current.domain) : result.brand;
  const next = appIdentity(result.appId, domain);
  const existing = instances.find((candidate) => appOf(candidate.block) === next);
  const effective = existing?.id ?? instance;
  const previous = appOf(instances.find((candidate) => candidate.id === effective)?.block ?? {});
  const appChanged = previous !== '' && previous !== next;
  const target = feishuInstances.blockIn(section, effective);
  for (const key of ['app_id', 'app_secret', 'identity_key']) delete target[key];
  Object.assign(target, { appId: result.appId, appSecret: result.appSecret, identityKey: next, enabled: true });
  if (!urlDomain) target.domain = domain;
  if (target.name === undefined && Array.isArray(section.instances)) {
    target.name = effective === DEFAULT_INSTANCE ? 'nanobot' : `nanobot ${effective}`;
  }
  if (appChanged) {
    target.allowFrom = [];
    delete target.allow_from;
  }
  return { instance: effective, appChanged };
}

function objectAt(tree: Record<string, unknown>, key: string): Record<string, unknown> {
  const value = tree[key];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) tree[key] = {};
  return tree[key] as Record<string, unknown>;
}

/** `nanobot channels login feishu[.<id>]` and the WebUI's Connect. */
export async function feishuLogin(
  settings: FeishuSettings,
  context: LoginContext,
  options: LoginOptions = {},
): Promise<void> {
  const instance = context.instance ?? DEFAULT_INSTANCE;
  if (!INSTANCE_ID.test(instance)) throw new UserError(`Invalid Feishu instance id: ${instance.slice(0, 64)}`);
  const name = runtimeName('feishu', instance);
  if (!context.force && settings.appId.trim() && settings.appSecret.trim()) {
    context.out(
      `${name} already has an App ID and App Secret. Run \`nanobot channels login ${name} --force\` to create a new bot instead.\n`,
    );
    return;
  }
  const { updateConfig } = context;
  if (!updateConfig) throw new Error('feishu login: no way to save the config');
  const result = await register(settings.domain, context, options);
  let saved: { instance: string; appChanged: boolean } | undefined;
  await updateConfig((raw) => {
    saved = saveRegistration(raw, instance, result);
  });
  if (!saved) throw new Error('feishu login: the config was not saved');
  const savedName = runtimeName('feishu', saved.instance);
  if (saved.appChanged) await forgetApprovals(join(context.dataDir, 'pairing'), savedName);
  context.out(`Feishu / Lark bot created: App ID ${result.appId} (${result.brand}), saved as ${savedName}.\n`);
  context.out('A running gateway starts it by itself; message the bot in Feishu / Lark to pair with it.\n');
}

/** The people approved for the old app (and pending requests) do not carry over to a new one. */
async function forgetApprovals(dir: string, channel: string): Promise<void> {
  const store = new PairingStore({ dir });
  for (const sender of Object.keys(store.approved(channel))) await store.revoke(channel, sender);
  for (const pending of store.listPending()) if (pending.channel === channel) await store.deny(pending.code);
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
