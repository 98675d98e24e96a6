/**
 * The DingTalk (钉钉) channel: an enterprise internal app's robot over Stream Mode, with the official `dingtalk-stream`
 * SDK (installed on demand) holding the WebSocket, and the robot API sending. Settings are upstream nanobot's
 * `channels.dingtalk` keys (clientId, clientSecret, allowFrom, groupUserIsolation, disablePrivateChat, and the
 * remote-media keys); `apiBase` and `oapiBase` are additions that point it at another address (a test's fake).
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { errorMessage, UserError } from '../../util/errors.js';
import { defineChannel, type VerifyResult } from '../definition.js';
import { channelSdk, channelSettingsSchema, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup } from '../setup.js';

export const DINGTALK_API = 'https://api.dingtalk.com';
export const DINGTALK_OAPI = 'https://oapi.dingtalk.com';

export const dingtalkSettingsSchema = channelSettingsSchema.extend({
  /** The app's Client ID (AppKey); also the robot's robotCode. */
  clientId: z.union([z.string(), z.number()]).transform(String).default(''),
  clientSecret: z.string().default(''),
  /** Upstream's switches for fetching remote media URLs it sends; files sent here are local, so they are not read. */
  allowRemoteMediaRedirects: z.boolean().default(false),
  remoteMediaRedirectAllowedHosts: z.array(z.string()).default([]),
  /** Each member of a group gets a session of their own (upstream's key). */
  groupUserIsolation: z.boolean().default(false),
  /** Groups only: a direct message gets a notice and no turn (upstream's key). */
  disablePrivateChat: z.boolean().default(false),
  /** Overrides https://api.dingtalk.com (token, Stream registration, robot messages); https, or http to this machine. */
  apiBase: z.string().default(DINGTALK_API),
  /** Overrides https://oapi.dingtalk.com (media upload). */
  oapiBase: z.string().default(DINGTALK_OAPI),
});

export type DingtalkSettings = z.infer<typeof dingtalkSettingsSchema>;

/** What nanobot uses of the SDK. */
export type DingtalkSdk = Pick<typeof import('dingtalk-stream'), 'DWClient' | 'TOPIC_ROBOT'>;

const HINT =
  'Create an internal app at https://open-dev.dingtalk.com/ (钉钉开放平台 → 应用开发 → 企业内部应用), add the robot ' +
  'capability with message receiving mode "Stream 模式", publish it, and copy its Client ID and Client Secret ' +
  '(凭证与基础信息) into channels.dingtalk.clientId and channels.dingtalk.clientSecret.';

function checkUrl(key: 'apiBase' | 'oapiBase', value: string): void {
  const checked = checkSecureUrl(value.trim());
  if ('error' in checked) {
    throw new UserError(
      `channels.dingtalk.${key} ${checked.error}: ${value}`,
      `Leave it out for ${key === 'apiBase' ? DINGTALK_API : DINGTALK_OAPI}.`,
    );
  }
}

export const dingtalkChannel = defineChannel<DingtalkSettings>({
  name: 'dingtalk',
  displayName: 'DingTalk',
  schema: dingtalkSettingsSchema,
  setup: {
    officialUrl: 'https://open.dingtalk.com/',
    fields: [
      {
        key: 'clientId',
        kind: 'string',
        label: 'Client ID',
        help: 'The app’s Client ID (AppKey), from 凭证与基础信息 in the DingTalk developer console.',
        required: true,
        credential: true,
      },
      {
        key: 'clientSecret',
        kind: 'secret',
        label: 'Client Secret',
        help: 'The app’s Client Secret (AppSecret), from the same page.',
        required: true,
        credential: true,
      },
      {
        ...allowFromField,
        help: 'DingTalk user ids (staff ids) who may talk to the agent, comma-separated; strangers get a pairing code in a direct chat.',
      },
    ],
  } satisfies ChannelSetup,
  setupHint: HINT,
  validate(settings) {
    requireSetting('dingtalk', 'clientId', settings.clientId, HINT);
    requireSetting('dingtalk', 'clientSecret', settings.clientSecret, HINT);
    checkUrl('apiBase', settings.apiBase);
    checkUrl('oapiBase', settings.oapiBase);
  },
  verify: verifyCredentials,
  async createPlatform(settings, context) {
    const sdk = await loadSdk();
    const { DingtalkPlatform } = await import('./platform.js');
    return new DingtalkPlatform({ sdk, settings, log: context.log });
  },
});

export function loadSdk(): Promise<DingtalkSdk> {
  return channelSdk('dingtalk', 'DingTalk', 'dingtalk-stream', () => import('dingtalk-stream'));
}

/** An access token for clientId + clientSecret: the cheapest check DingTalk has that the credentials are right. */
async function verifyCredentials(settings: DingtalkSettings): Promise<VerifyResult> {
  const { DingtalkApi } = await import('./api.js');
  const api = new DingtalkApi(settings);
  try {
    await api.accessToken();
    return {
      status: 'pass',
      message: `DingTalk accepted Client ID ${settings.clientId} and its secret.`,
      identity: { account: settings.clientId },
    };
  } catch (err) {
    if (err instanceof UserError) return { status: 'fail', message: err.message };
    return { status: 'warn', message: `Could not ask DingTalk for an access token: ${errorMessage(err)}` };
  }
}
