/**
 * The Signal channel: settings (nanobot's `channels.signal` keys) and its registration. Signal has no bot API: the
 * channel talks to signal-cli's HTTP daemon (JSON-RPC at /api/v1/rpc, incoming messages as server-sent events at
 * /api/v1/events) on this machine, which it can also start itself (`startDaemon`). No npm package is needed.
 */
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { isLoopbackHost } from '../../security/hosts.js';
import { errorMessage, UserError } from '../../util/errors.js';
import { expandHome } from '../../util/fs.js';
import { defineChannel, type VerifyResult } from '../definition.js';
import { channelSettingsSchema, idList, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, GROUP_POLICIES } from '../setup.js';

export const signalSettingsSchema = channelSettingsSchema
  .extend({
    /** The bot's Signal account, in international format (+4915112345678): registered or linked in signal-cli. */
    phoneNumber: z.string().default(''),
    /** Where signal-cli's HTTP daemon listens. It has no authentication, so only this machine is accepted. */
    daemonHost: z.string().default('localhost'),
    daemonPort: z.int().min(1).max(65535).default(8080),
    /** Start `signal-cli -a <phoneNumber> daemon --http <host:port>` with the gateway (and stop it with it). */
    startDaemon: z.boolean().default(false),
    /** The signal-cli executable (a name on PATH or a full path). */
    cliPath: z.string().default('signal-cli'),
    /** Where signal-cli saves received attachments; default ~/.local/share/signal-cli/attachments. */
    attachmentsDir: z.string().nullish(),
    /** Recent group messages (not addressed to the agent) handed over as context when it is addressed. */
    groupMessageBufferSize: z.int().min(1).max(500).default(20),
    /** The reaction that tells the sender their message reached the agent; empty: none. */
    reactEmoji: z.string().max(16).default('👀'),
    /** Unset: from group.requireMention (mention, or open). */
    groupPolicy: z.enum(GROUP_POLICIES).optional(),
    dm: z
      .looseObject({
        enabled: z.boolean().default(true),
        /** `allowlist`: allowFrom + dm.allowFrom and approved pairings (strangers get a code); `open`: anyone. */
        policy: z.enum(['allowlist', 'open']).default('allowlist'),
        /** Phone numbers (+4915…) or Signal UUIDs. */
        allowFrom: idList.default([]),
      })
      .prefault({}),
    group: z
      .looseObject({
        /** false: group messages are ignored. */
        enabled: z.boolean().default(false),
        /** `allowlist`: only the groups in group.allowFrom; `open`: every group the account is in. */
        policy: z.enum(['allowlist', 'open']).default('allowlist'),
        /** Group ids (base64, as `listGroups` or the gateway log shows them); `*`: every group. */
        allowFrom: idList.default([]),
        /** Answer only when @mentioned (or replied to); false: every message of an admitted sender. */
        requireMention: z.boolean().default(true),
      })
      .prefault({}),
  })
  .transform((settings) => {
    // The framework has one sender allow list for every chat type: dm.allowFrom and an open DM policy extend it.
    const extra = [...settings.dm.allowFrom, ...(settings.dm.policy === 'open' ? ['*'] : [])];
    const allowFrom = [...new Set([...settings.allowFrom, ...extra])];
    // Which groups are served (group.enabled, group.policy) is the platform's check; this is who is answered there.
    const groupPolicy = settings.groupPolicy ?? (settings.group.requireMention ? 'mention' : 'open');
    const groupAllowFrom = [...new Set([...settings.groupAllowFrom, ...settings.group.allowFrom])];
    return { ...settings, allowFrom, groupPolicy, groupAllowFrom };
  });

export type SignalSettings = z.infer<typeof signalSettingsSchema>;

const E164 = /^\+[1-9]\d{5,14}$/;

const ACCOUNT_HINT =
  'The Signal account the agent uses, e.g. +4915112345678. Link signal-cli to it (`nanobot channels login signal`) ' +
  'or register a number of its own with signal-cli (a second number is best: the agent answers in its name).';

export const INSTALL_HINT =
  'Install signal-cli from https://github.com/AsamK/signal-cli/releases (the native Linux build needs no Java; ' +
  'the other builds need Java 21+), put it on PATH or set channels.signal.cliPath to it.';

export const signalChannel = defineChannel<SignalSettings>({
  name: 'signal',
  displayName: 'Signal',
  schema: signalSettingsSchema,
  setup: {
    officialUrl: 'https://github.com/AsamK/signal-cli',
    fields: [
      {
        key: 'phoneNumber',
        kind: 'string',
        label: 'Phone number',
        help: ACCOUNT_HINT,
        required: true,
        credential: true,
      },
      {
        key: 'daemonHost',
        kind: 'string',
        label: 'Daemon host',
        help: 'Where signal-cli’s HTTP daemon listens: this machine only (localhost, 127.0.0.1 or ::1).',
        defaultValue: 'localhost',
      },
      {
        key: 'daemonPort',
        kind: 'int',
        label: 'Daemon port',
        help: 'The port of `signal-cli daemon --http localhost:PORT`.',
        defaultValue: 8080,
      },
      {
        key: 'startDaemon',
        kind: 'bool',
        label: 'Start the daemon',
        help: 'Let the gateway start signal-cli’s daemon itself (and stop it when it stops).',
        defaultValue: false,
      },
      { ...allowFromField, help: 'Phone numbers (+4915…), Signal UUIDs or @usernames; * lets everyone in.' },
      {
        key: 'dm.allowFrom',
        kind: 'list',
        label: 'Direct messages from',
        help: 'More phone numbers or UUIDs allowed in direct messages; strangers get a pairing code.',
      },
      {
        key: 'group.enabled',
        kind: 'bool',
        label: 'Groups',
        help: 'Answer in Signal groups (admitted senders, when @mentioned unless group.requireMention is false).',
        defaultValue: false,
      },
      {
        key: 'group.allowFrom',
        kind: 'list',
        label: 'Group ids',
        help: 'The groups the agent serves (ids as the gateway log shows them); * for every group.',
      },
    ],
  } satisfies ChannelSetup,
  setupHint:
    'Install signal-cli, link it to the bot’s Signal account (`nanobot channels login signal`), then set ' +
    'channels.signal.phoneNumber and either run `signal-cli -a <number> daemon --http localhost:8080 ' +
    '--receive-mode on-connection` or set channels.signal.startDaemon to true.',
  validate(settings) {
    requireSetting('signal', 'phoneNumber', settings.phoneNumber, ACCOUNT_HINT);
    if (!E164.test(settings.phoneNumber.trim()))
      throw new UserError(
        `channels.signal.phoneNumber must be a phone number in international format, like +4915112345678 (got ${settings.phoneNumber}).`,
      );
    if (!isLoopbackHost(settings.daemonHost.trim()))
      throw new UserError(
        `channels.signal.daemonHost must be this machine (localhost, 127.0.0.1 or ::1), not ${settings.daemonHost}.`,
        'signal-cli’s HTTP daemon has no authentication: anyone who reaches it can read and send as the account. ' +
          'Run it here (or publish its port on 127.0.0.1 only).',
      );
    if (settings.attachmentsDir?.trim() && !isAbsolute(expandHome(settings.attachmentsDir.trim(), homedir())))
      throw new UserError(
        `channels.signal.attachmentsDir must be an absolute path (got ${settings.attachmentsDir}).`,
        'signal-cli saves attachments under its data directory, by default ~/.local/share/signal-cli/attachments.',
      );
    if (!settings.cliPath.trim()) requireSetting('signal', 'cliPath', '', INSTALL_HINT);
  },
  verify: verifyDaemon,
  async createPlatform(settings, context) {
    const { SignalPlatform } = await import('./platform.js');
    return new SignalPlatform({ settings, log: context.log });
  },
  qrLogin: true,
  async login(settings, context) {
    const { linkDevice } = await import('./login.js');
    await linkDevice(settings, context);
  },
});

/** The daemon's root URL (an IPv6 literal bracketed). */
export function daemonRoot(settings: Pick<SignalSettings, 'daemonHost' | 'daemonPort'>): string {
  const host = settings.daemonHost.trim();
  const literal = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${literal}:${settings.daemonPort}`;
}

/** Where signal-cli keeps received attachments. */
export function attachmentsDirOf(settings: Pick<SignalSettings, 'attachmentsDir'>, home = homedir()): string {
  const configured = settings.attachmentsDir?.trim();
  if (configured) return resolve(expandHome(configured, home));
  return join(home, '.local', 'share', 'signal-cli', 'attachments');
}

/** Asks the daemon whether it runs and knows the account: for the WebUI's "check" button. */
async function verifyDaemon(settings: SignalSettings): Promise<VerifyResult> {
  const { SignalRpc } = await import('./rpc.js');
  const rpc = new SignalRpc(daemonRoot(settings));
  try {
    await rpc.check(4_000);
  } catch {
    return settings.startDaemon
      ? { status: 'skipped', message: 'No signal-cli daemon runs now; the gateway starts one (startDaemon is on).' }
      : { status: 'warn', message: `No signal-cli daemon answers at ${rpc.root}: start it, or turn on startDaemon.` };
  }
  const account = settings.phoneNumber.trim();
  const statuses = z.array(z.looseObject({ uuid: z.string().nullish(), isRegistered: z.boolean().nullish() }));
  try {
    const [self] = await rpc.call('getUserStatus', { recipient: [account] }, statuses, 8_000);
    if (self?.isRegistered === false)
      return { status: 'fail', message: `Signal says ${account} is not registered: link or register it first.` };
    return {
      status: 'pass',
      message: `signal-cli's daemon answers for ${account}.`,
      identity: { name: account, ...(self?.uuid ? { account: self.uuid } : {}) },
    };
  } catch (err) {
    return { status: 'fail', message: `signal-cli's daemon answers, but not for ${account}: ${errorMessage(err)}` };
  }
}
