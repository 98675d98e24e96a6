/**
 * The QR login (`nanobot channels login weixin`, and the WebUI's Connect): get_bot_qrcode gives a code to scan,
 * get_qrcode_status is polled until WeChat confirms, and the bot token is saved where upstream keeps it
 * (state.ts). A code that expires is replaced (three times at most); a server answer that names another host is
 * followed only to WeChat's own hosts, since the token is sent there afterwards.
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import type { LoginContext } from '../definition.js';
import { ERR_INVALID_ARGUMENT, IlinkApi, IlinkError, IlinkHttpError } from './api.js';
import type { WeixinSettings } from './index.js';
import { fingerprint, readAccount, stateDirOf, updateAccount } from './state.js';

export const EXPIRED_MESSAGE = 'WeChat login expired: WeChat no longer accepts the saved bot token.';
export const EXPIRED_HINT =
  'Run `nanobot channels login weixin` again (or Connect in the WebUI) and scan the new code; the gateway picks it up.';
export const LOGIN_HINT =
  'Run `nanobot channels login weixin` (or Connect in the WebUI) and scan the code with WeChat; the gateway picks it up.';

const MAX_REFRESHES = 3;
const STATUS_TIMEOUT_MS = 60_000;

const qrAnswer = z.looseObject({
  qrcode: z.string().min(1),
  qrcode_img_content: z.string().nullish().catch(undefined),
});
const statusAnswer = z.looseObject({
  status: z.string().catch('wait'),
  bot_token: z.string().nullish().catch(undefined),
  ilink_bot_id: z.string().nullish().catch(undefined),
  ilink_user_id: z.string().nullish().catch(undefined),
  baseurl: z.string().nullish().catch(undefined),
  redirect_host: z.string().nullish().catch(undefined),
});

/**
 * A base URL the server (or a saved login) names, kept only when it is the configured one's origin or https on
 * WeChat's own domain; undefined otherwise.
 */
export function safeBaseUrl(value: string | null | undefined, configured: string): string | undefined {
  const trimmed = value?.trim();
  if (!trimmed) return undefined;
  const candidate = /^https?:\/\//i.test(trimmed) ? trimmed : `https://${trimmed}`;
  const checked = checkSecureUrl(candidate);
  if ('error' in checked || checked.url.username || checked.url.password) return undefined;
  const { url } = checked;
  const sameOrigin = (() => {
    try {
      return new URL(configured).origin === url.origin;
    } catch {
      return false;
    }
  })();
  const wechat =
    url.protocol === 'https:' && (url.hostname === 'weixin.qq.com' || url.hostname.endsWith('.weixin.qq.com'));
  return sameOrigin || wechat ? candidate.replace(/\/+$/, '') : undefined;
}

export interface LoginOptions {
  fetch?: typeof fetch;
  /** Between status polls (WeChat answers at once while nobody has scanned). */
  pollIntervalMs?: number;
}

export async function qrLogin(settings: WeixinSettings, context: LoginContext, options: LoginOptions = {}) {
  const stateDir = stateDirOf(settings, context.dataDir);
  const existing = readAccount(stateDir);
  const api = new IlinkApi({
    baseUrl: settings.baseUrl,
    routeTag: settings.routeTag ?? undefined,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const call = { timeoutMs: 15_000, auth: false, ...(context.signal ? { signal: context.signal } : {}) };
  const localTokens = [...new Set([settings.token.trim(), existing?.token ?? ''].filter(Boolean))];

  const newCode = async (): Promise<string> => {
    const ask = (tokens: string[]) =>
      api.post('ilink/bot/get_bot_qrcode?bot_type=3', { local_token_list: tokens }, qrAnswer, {
        ...call,
        baseInfo: false,
      });
    let answer: z.infer<typeof qrAnswer>;
    try {
      answer = await ask(localTokens);
    } catch (err) {
      // A saved token WeChat no longer knows: ask again without it.
      if (!(err instanceof IlinkError && err.code === ERR_INVALID_ARGUMENT && localTokens.length)) throw err;
      answer = await ask([]);
    }
    const content = answer.qrcode_img_content || answer.qrcode;
    context.qr?.(content);
    context.out('Scan this code with WeChat on your phone (+ → Scan), then confirm the login there.\n');
    return answer.qrcode;
  };

  let code = await started(newCode);
  let pollBase = settings.baseUrl;
  let refreshes = 0;
  let scanned = false;
  const interval = options.pollIntervalMs ?? 1_000;
  for (;;) {
    if (context.signal?.aborted) throw new UserError('WeChat login cancelled.');
    let status: z.infer<typeof statusAnswer>;
    try {
      status = await api.get(
        'ilink/bot/get_qrcode_status',
        { qrcode: code },
        statusAnswer,
        {
          ...call,
          timeoutMs: STATUS_TIMEOUT_MS,
        },
        pollBase,
      );
    } catch (err) {
      if (context.signal?.aborted) throw new UserError('WeChat login cancelled.');
      if (err instanceof IlinkHttpError && (err.status === undefined || err.status >= 500 || err.status === 429)) {
        await pause(interval, context.signal);
        continue;
      }
      throw loginFailed(err);
    }
    switch (status.status) {
      case 'confirmed': {
        const token = status.bot_token?.trim();
        if (!token) throw new UserError('WeChat confirmed the login but sent no bot token.', 'Try the login again.');
        const configured = settings.token.trim();
        await updateAccount(stateDir, () => ({
          token,
          get_updates_buf: '',
          context_tokens: {},
          typing_tickets: {},
          base_url: safeBaseUrl(status.baseurl, settings.baseUrl) ?? settings.baseUrl,
          ...(configured && configured !== token ? { replaced_config_token_sha256: fingerprint(configured) } : {}),
        }));
        context.out(`Logged in to WeChat${status.ilink_bot_id ? ` as bot ${status.ilink_bot_id}` : ''}.\n`);
        context.out(
          `Saved the login in ${stateDir}/account.json; a running gateway picks it up by itself within a second.\n`,
        );
        return;
      }
      case 'scaned':
        if (!scanned) context.out('Scanned: confirm the login in WeChat on your phone.\n');
        scanned = true;
        break;
      case 'scaned_but_redirect': {
        const redirected = safeBaseUrl(status.redirect_host, settings.baseUrl);
        if (redirected) pollBase = redirected;
        break;
      }
      case 'binded_redirect':
        if (existing?.token) {
          context.out('This WeChat account is already connected to this bot; the saved login is kept.\n');
          return;
        }
        throw new UserError(
          'WeChat says this account is already bound to a bot, but no login is saved here.',
          'Unbind the bot in WeChat, then run `nanobot channels login weixin` again.',
        );
      case 'need_verifycode':
        throw new UserError(
          'WeChat asks for the number it shows on your phone, which nanobot-ts cannot take yet.',
          'Try the login again; if WeChat keeps asking, log in once with upstream nanobot (the saved login works here).',
        );
      case 'expired':
      case 'verify_code_blocked':
        refreshes += 1;
        if (refreshes > MAX_REFRESHES) {
          throw new UserError(
            `The WeChat login code expired ${MAX_REFRESHES} times without being confirmed.`,
            'Run `nanobot channels login weixin` again when your phone is at hand.',
          );
        }
        context.out('The code expired; here is a new one.\n');
        code = await started(newCode);
        pollBase = settings.baseUrl;
        scanned = false;
        continue;
      default:
        break;
    }
    await pause(interval, context.signal);
  }
}

async function started(newCode: () => Promise<string>): Promise<string> {
  try {
    return await newCode();
  } catch (err) {
    throw loginFailed(err);
  }
}

function loginFailed(err: unknown): Error {
  if (err instanceof UserError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new UserError(
    `WeChat login failed: ${message}`,
    'Check channels.weixin.baseUrl and the network, then try again.',
  );
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
