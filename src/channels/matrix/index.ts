/**
 * The Matrix channel: settings (nanobot's `channels.matrix` keys) and its registration. matrix-js-sdk is imported
 * only when the channel starts. Encrypted rooms and direct chats work through its Rust crypto (e2ee.ts).
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { defineChannel } from '../definition.js';
import { channelSdk, channelSettingsSchema, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, groupPolicyField } from '../setup.js';
import { readDeviceStatus } from './crypto-store.js';

export const matrixSettingsSchema = channelSettingsSchema.extend({
  /** The homeserver's client-server API root, e.g. https://matrix.org (what Element shows as "Homeserver"). */
  homeserver: z.string().default('https://matrix.org'),
  /** The bot account's full Matrix ID, e.g. `@nanobot:example.org`. */
  userId: z.string().default(''),
  accessToken: z.string().default(''),
  /** Logs in with this when `accessToken` is empty; the session is kept in `<dataDir>/matrix/session.json`. */
  password: z.string().default(''),
  deviceId: z.string().default(''),
  /** Reads and answers end-to-end encrypted rooms; the device's keys are kept in `<dataDir>/matrix/crypto/`. */
  e2eeEnabled: z.boolean().default(true),
  /** nanobot answers every message in a room it is in by default (`mention` and `allowlist` narrow that). */
  groupPolicy: z.enum(['mention', 'open', 'allowlist']).default('open'),
  /** An `@room` mention counts as mentioning the bot (`groupPolicy: "mention"`). */
  allowRoomMentions: z.boolean().default(false),
  /** Every streamed edit is a permanent event in the room, so streaming is off unless asked for (as in nanobot). */
  streaming: z.boolean().default(false),
  streamEditInterval: z.number().min(0.05).default(2),
});

export type MatrixSettings = z.infer<typeof matrixSettingsSchema>;

const TOKEN_HINT =
  'Set channels.matrix.password (the bot logs in itself), or an accessToken from a login made for nanobot ' +
  '(not an Element session’s: that device already has encryption keys of its own, which nanobot cannot have).';

export const matrixChannel = defineChannel<MatrixSettings>({
  name: 'matrix',
  displayName: 'Matrix',
  schema: matrixSettingsSchema,
  setup: {
    officialUrl: 'https://matrix.org/ecosystem/clients/',
    fields: [
      {
        key: 'homeserver',
        kind: 'string',
        label: 'Homeserver',
        help: 'The https:// URL of the bot account’s homeserver.',
        required: true,
        defaultValue: 'https://matrix.org',
      },
      {
        key: 'userId',
        kind: 'string',
        label: 'User ID',
        help: 'The bot account’s full ID, like @nanobot:matrix.org.',
        required: true,
      },
      {
        key: 'password',
        kind: 'secret',
        label: 'Password',
        help: 'The bot account’s password: the bot logs in itself.',
      },
      { key: 'accessToken', kind: 'secret', label: 'Access token', help: TOKEN_HINT, credential: true },
      {
        key: 'deviceId',
        kind: 'string',
        label: 'Device ID',
        help: 'The device of that access token (optional; a password login makes its own).',
      },
      groupPolicyField('open'),
      allowFromField,
    ],
    oneOf: [['password'], ['accessToken']],
  } satisfies ChannelSetup,
  setupHint:
    'Create a Matrix account for the bot, then set channels.matrix.homeserver, userId and password (or accessToken).',
  validate(settings) {
    homeserverRoot(settings.homeserver);
    requireSetting('matrix', 'userId', settings.userId, 'The bot account’s full ID, like @nanobot:matrix.org.');
    if (!/^@[^:\s]+:\S+$/.test(settings.userId))
      throw new UserError(
        `channels.matrix.userId must be a full Matrix ID like @nanobot:matrix.org (got ${settings.userId}).`,
      );
    if (!settings.accessToken.trim() && !settings.password) requireSetting('matrix', 'accessToken', '', TOKEN_HINT);
  },
  statusDetail(settings, dataDir) {
    if (!settings.e2eeEnabled) return 'encryption: off (e2eeEnabled is false): encrypted rooms are not read';
    const device = readDeviceStatus(dataDir);
    if (!device) return 'encryption: on; the device’s keys are made when the gateway first connects';
    const trust = device.verified
      ? 'verified'
      : 'not verified (Element shows it as unverified; compare the fingerprint under the bot’s sessions)';
    return `encryption: device ${device.deviceId}, ${trust}, fingerprint ${device.fingerprint}`;
  },
  async createPlatform(settings, context) {
    const sdk = await importSdk(context.log);
    const { MatrixPlatform } = await import('./platform.js');
    return new MatrixPlatform({ sdk, settings, log: context.log, dataDir: context.dataDir });
  },
  async login(settings, context) {
    const sdk = await importSdk(context.log);
    const { checkLogin } = await import('./session.js');
    await checkLogin(sdk, settings, homeserverRoot(settings.homeserver), context.dataDir, context);
  },
});

/** The SDK, its console logging routed into our log first (some SDK modules bind the logger as they load). */
async function importSdk(log: Logger): Promise<typeof import('matrix-js-sdk')> {
  const { logger } = await channelSdk(
    'matrix',
    'Matrix',
    'matrix-js-sdk/lib/logger.js',
    () => import('matrix-js-sdk/lib/logger.js'),
  );
  const { routeSdkLogs } = await import('./sdk-log.js');
  routeSdkLogs(logger, log);
  return channelSdk('matrix', 'Matrix', 'matrix-js-sdk', () => import('matrix-js-sdk'));
}

/**
 * The API root without a trailing slash. The access token travels with every request, so plain http is accepted
 * only for a homeserver on this machine.
 */
export function homeserverRoot(homeserver: string): string {
  const checked = checkSecureUrl(homeserver);
  if ('error' in checked)
    throw new UserError(
      `channels.matrix.homeserver ${checked.error}: ${homeserver}`,
      'The access token is sent with every request; use e.g. https://matrix.org.',
    );
  return homeserver.replace(/\/+$/, '');
}
