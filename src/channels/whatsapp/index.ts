/**
 * The WhatsApp channel: nanobot's `channels.whatsapp` keys and its registration. Upstream ran Baileys in a separate
 * Node "bridge" process; here Baileys (the WhatsApp Web multi-device protocol) runs inside the gateway, imported only
 * when the channel starts or logs in. The phone links this gateway as a device by scanning a QR code
 * (`nanobot channels login whatsapp`); the keys live in `<dataDir>/whatsapp-auth`, where upstream's bridge kept them.
 */
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { isLoopbackHost } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import { defineChannel, type PlatformContext } from '../definition.js';
import { channelSdk, channelSettingsSchema } from '../settings.js';
import { allowFromField, type ChannelSetup, groupPolicyField } from '../setup.js';

/** WhatsApp Web's own endpoint; Baileys' default. */
export const WHATSAPP_WEB_URL = 'wss://web.whatsapp.com/ws/chat';

export const whatsappSettingsSchema = channelSettingsSchema
  .extend({
    /** Upstream's default: in groups, answer every message from an allowed sender. */
    groupPolicy: z.enum(['mention', 'open', 'allowlist']).default('open'),
    /** WhatsApp edits are limited and shown as "edited": one message per reply part. */
    streaming: z.boolean().default(false),
    /** Upstream: WhatsApp LID (privacy id) → phone number, so an allowFrom phone number also admits that LID. */
    lidMappings: z.record(z.string(), z.union([z.string(), z.number()]).transform(String)).default({}),
    /** nanobot-ts: the linked-device folder; empty: `<dataDir>/whatsapp-auth` (upstream bridge's AUTH_DIR). */
    authDir: z.string().default(''),
    /** nanobot-ts: mark answered messages read (blue ticks), as upstream's bridge did. */
    sendReadReceipts: z.boolean().default(true),
    /**
     * nanobot-ts, for tests and local proxies only: the WhatsApp Web socket. Anything but the default must be a
     * loopback ws:// address; Baileys still checks the server's certificate chain against WhatsApp's root key.
     */
    webSocketUrl: z.string().default(WHATSAPP_WEB_URL),
  })
  .transform((settings) => ({
    ...settings,
    allowFrom: settings.allowFrom.map(normalizeAllowEntry),
    groupAllowFrom: settings.groupAllowFrom.map((entry) => entry.trim()),
  }));

export type WhatsAppSettings = z.infer<typeof whatsappSettingsSchema>;

/** `+49 151-234 5678`, `491512345678@s.whatsapp.net` → `491512345678`, the form sender ids take. */
export function normalizeAllowEntry(entry: string): string {
  const trimmed = entry.trim();
  if (trimmed === '*' || trimmed.startsWith('@')) return trimmed;
  const user = trimmed.replace(/@s\.whatsapp\.net$/i, '');
  return /^\+?[\d\s().-]+$/.test(user) ? user.replace(/[^\d]/g, '') : user;
}

/** The auth folder: an absolute `authDir`, else `<dataDir>/whatsapp-auth`. */
export function authFolder(settings: WhatsAppSettings, dataDir: string): string {
  const configured = settings.authDir.trim();
  return configured
    ? isAbsolute(configured)
      ? configured
      : join(dataDir, configured)
    : join(dataDir, 'whatsapp-auth');
}

/** The socket URL, checked: the default, or a loopback ws(s):// address (a test server or a local proxy). */
export function socketUrl(settings: WhatsAppSettings): URL {
  const raw = settings.webSocketUrl.trim() || WHATSAPP_WEB_URL;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UserError(`channels.whatsapp.webSocketUrl is not a URL: ${raw}`, `Remove it to use ${WHATSAPP_WEB_URL}.`);
  }
  if (raw === WHATSAPP_WEB_URL) return url;
  if (!/^wss?:$/.test(url.protocol) || !isLoopbackHost(url.hostname) || url.username || url.password) {
    throw new UserError(
      `channels.whatsapp.webSocketUrl must be ${WHATSAPP_WEB_URL} or a ws:// address on this machine: ${raw}`,
      'It exists for test servers and local proxies; remove it to talk to WhatsApp.',
    );
  }
  return url;
}

/** Baileys plus the QR renderer, loaded on demand. */
export type WhatsAppSdk = typeof import('baileys');

export async function loadSdk(): Promise<WhatsAppSdk> {
  // Pinned to the unscoped `baileys@7.0.0-rc14` (the same project as @whiskeysockets/baileys, whose releases pull
  // dependencies from GitHub, which a plain npm install cannot always reach); package.json pins it exactly.
  const loaded = await channelSdk('whatsapp', 'WhatsApp', 'baileys', () => import('baileys'));
  const sdk = (typeof loaded.makeWASocket === 'function' ? loaded : (loaded as { default?: unknown }).default) as
    | WhatsAppSdk
    | undefined;
  if (typeof sdk?.makeWASocket !== 'function') throw new Error('baileys did not load as expected (no makeWASocket)');
  return sdk;
}

const LOGIN_HINT =
  'Run `nanobot channels login whatsapp` and scan the QR code with WhatsApp on your phone (Settings → Linked ' +
  'devices → Link a device), or press Connect on the WebUI’s channel page.';

export const whatsappChannel = defineChannel<WhatsAppSettings>({
  name: 'whatsapp',
  displayName: 'WhatsApp',
  schema: whatsappSettingsSchema,
  setup: {
    officialUrl: 'https://faq.whatsapp.com/1317564962315842',
    fields: [
      {
        ...allowFromField,
        help: 'Phone numbers (with country code, no +) who may talk to the agent, comma-separated; * lets everyone in. Empty: strangers get a pairing code.',
      },
      { ...groupPolicyField('open'), choices: ['open', 'mention', 'allowlist'] },
    ],
  } satisfies ChannelSetup,
  setupHint: `WhatsApp links this gateway as a device of your phone's account. ${LOGIN_HINT}`,
  validate(settings) {
    socketUrl(settings);
  },
  qrLogin: true,
  async login(settings, context) {
    const sdk = await loadSdk();
    const { linkDevice } = await import('./login.js');
    await linkDevice(sdk, settings, context);
  },
  async createPlatform(settings, context: PlatformContext) {
    const sdk = await loadSdk();
    const { WhatsAppPlatform } = await import('./platform.js');
    return new WhatsAppPlatform({ sdk, settings, dataDir: context.dataDir, log: context.log });
  },
});

export { LOGIN_HINT };
