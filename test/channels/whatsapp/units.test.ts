/** The WhatsApp channel's pure parts: settings, message mapping, media rules, outgoing content, markup, state files. */
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as baileys from 'baileys';
import { afterEach, describe, expect, it } from 'vitest';
import { renderMarkdown } from '../../../src/channels/markup/render.js';
import { findChannel } from '../../../src/channels/registry.js';
import { openAuthStore } from '../../../src/channels/whatsapp/auth-store.js';
import {
  authFolder,
  normalizeAllowEntry,
  socketUrl,
  type WhatsAppSettings,
} from '../../../src/channels/whatsapp/index.js';
import {
  addressesBot,
  bareJid,
  isServedChat,
  keyOf,
  mediaOf,
  mediaUrlAllowed,
  senderId,
  textOf,
  unwrap,
  withoutBotMention,
} from '../../../src/channels/whatsapp/messages.js';
import { outgoingContent, toChatJid } from '../../../src/channels/whatsapp/outgoing.js';
import { SeenIds } from '../../../src/channels/whatsapp/seen.js';
import { authStoreFor, oneSignalTransactionAtATime } from '../../../src/channels/whatsapp/socket.js';

const channel = findChannel('whatsapp');
const parse = (block: Record<string, unknown>) => channel?.parse(block) as WhatsAppSettings;
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'nb-wa-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('settings', () => {
  it('reads upstream’s keys with upstream’s defaults, and phone numbers in any common spelling', () => {
    const settings = parse({ enabled: true, allowFrom: ['+49 151-234 5678', '4915799@s.whatsapp.net', 351910070509] });
    expect(settings.allowFrom).toEqual(['491512345678', '4915799', '351910070509']);
    expect(settings.groupPolicy).toBe('open');
    expect(settings.lidMappings).toEqual({});
    expect(parse({ lidMappings: { '12345': 491512345678 } }).lidMappings).toEqual({ '12345': '491512345678' });
    expect(normalizeAllowEntry('*')).toBe('*');
  });

  it('keeps the session where upstream’s bridge did, or in authDir', () => {
    expect(authFolder(parse({}), '/home/u/.nanobot')).toBe('/home/u/.nanobot/whatsapp-auth');
    expect(authFolder(parse({ authDir: '/srv/wa' }), '/x')).toBe('/srv/wa');
  });

  it('talks to WhatsApp Web, or to a loopback test server only', () => {
    expect(socketUrl(parse({})).href).toBe('wss://web.whatsapp.com/ws/chat');
    expect(socketUrl(parse({ webSocketUrl: 'ws://127.0.0.1:4444/ws/chat' })).host).toBe('127.0.0.1:4444');
    expect(() => parse({ webSocketUrl: 'ws://10.0.0.5:4444/ws' })).toThrow(/on this machine/);
    expect(() => parse({ webSocketUrl: 'wss://evil.example/ws' })).toThrow(/webSocketUrl/);
    expect(() => parse({ webSocketUrl: 'http://127.0.0.1:1/' })).toThrow(/webSocketUrl/);
  });

  it('offers the QR login to the CLI and the WebUI', () => {
    expect(channel?.qrLogin).toBe(true);
    expect(channel?.login).toBeTypeOf('function');
    expect(channel?.setup.fields.map((f) => f.key)).toEqual(['allowFrom', 'groupPolicy']);
  });
});

describe('message mapping', () => {
  const bot = { jids: new Set(['4900000@s.whatsapp.net', '777@lid']) };

  it('names senders by phone number, through LID alternates and lidMappings', () => {
    expect(bareJid('4915:12@s.whatsapp.net')).toBe('4915@s.whatsapp.net');
    expect(bareJid('not a jid')).toBeUndefined();
    expect(senderId('4915:3@s.whatsapp.net', undefined, {})).toBe('4915');
    expect(senderId('555@lid', '4916@s.whatsapp.net', {})).toBe('4916');
    expect(senderId('555@lid', undefined, { '555': '+49 17' })).toBe('4917');
    expect(senderId('555@lid', undefined, {})).toBe('555@lid');
  });

  it('serves one-to-one chats and groups, never status or broadcast lists', () => {
    expect(isServedChat('4915@s.whatsapp.net')).toBe(true);
    expect(isServedChat('1203-99@g.us')).toBe(true);
    expect(isServedChat('status@broadcast')).toBe(false);
    expect(isServedChat('1@newsletter')).toBe(false);
  });

  it('unwraps disappearing and view-once messages; finds text, mentions and replies to the bot', () => {
    const inner = {
      extendedTextMessage: { text: '@4900000 hi there', contextInfo: { mentionedJid: ['4900000@s.whatsapp.net'] } },
    };
    const content = unwrap({ ephemeralMessage: { message: { viewOnceMessage: { message: inner } } } });
    expect(content && textOf(content)).toBe('@4900000 hi there');
    expect(addressesBot(content?.extendedTextMessage?.contextInfo ?? undefined, bot)).toBe(true);
    expect(addressesBot({ participant: '777:4@lid' }, bot)).toBe(true);
    expect(addressesBot({ mentionedJid: ['1@s.whatsapp.net'] }, bot)).toBe(false);
    expect(withoutBotMention('@4900000 hi  there', bot)).toBe('hi there');
  });

  it('maps voice notes, images and documents, with declared sizes', () => {
    expect(mediaOf({ audioMessage: { ptt: true, mimetype: 'audio/ogg; codecs=opus', fileLength: 900 } })).toMatchObject(
      {
        kind: 'audio',
        voice: true,
        size: 900,
      },
    );
    expect(mediaOf({ imageMessage: { mimetype: 'image/jpeg' } })).toMatchObject({ kind: 'image', type: 'image' });
    expect(mediaOf({ documentMessage: { fileName: '../../.bashrc' } })).toMatchObject({
      kind: 'file',
      name: '../../.bashrc',
    });
    expect(mediaOf({ conversation: 'x' })).toBeUndefined();
  });

  it('downloads media only from WhatsApp’s hosts, or from the loopback test server itself', () => {
    const real = new URL('wss://web.whatsapp.com/ws/chat');
    const fake = new URL('ws://127.0.0.1:4444/ws/chat');
    expect(mediaUrlAllowed('https://mmg.whatsapp.net/v/t62/x', real)).toBe(true);
    expect(mediaUrlAllowed('https://media-fra5-1.cdn.whatsapp.net/x', real)).toBe(true);
    expect(mediaUrlAllowed('http://mmg.whatsapp.net/x', real)).toBe(false);
    expect(mediaUrlAllowed('https://whatsapp.net.evil.example/x', real)).toBe(false);
    expect(mediaUrlAllowed('https://169.254.169.254/latest', real)).toBe(false);
    expect(mediaUrlAllowed('http://127.0.0.1:4444/x', real)).toBe(false);
    expect(mediaUrlAllowed('http://127.0.0.1:4444/x', fake)).toBe(true);
    expect(mediaUrlAllowed('http://127.0.0.1:22/x', fake)).toBe(false);
  });

  it('accepts message keys with sane ids only', () => {
    expect(keyOf({ key: { remoteJid: '49:2@s.whatsapp.net', id: 'ABC123', fromMe: false } })).toEqual({
      chat: '49@s.whatsapp.net',
      id: 'ABC123',
      fromMe: false,
    });
    expect(keyOf({ key: { remoteJid: '49@s.whatsapp.net', id: '../../x y' } })).toBeUndefined();
  });
});

describe('outgoing', () => {
  it('addresses phone numbers and JIDs, refuses anything else', () => {
    expect(toChatJid('+49 151 234')).toBe('49151234@s.whatsapp.net');
    expect(toChatJid('1203-99@g.us')).toBe('1203-99@g.us');
    expect(() => toChatJid('evil/../x')).toThrow(/Not a WhatsApp chat/);
  });

  it('sends Opus as a voice note, images inline, anything else as a named document', () => {
    expect(outgoingContent({ path: '/m/a.ogg', name: 'a.ogg', kind: 'audio' }, 'audio')).toMatchObject({ ptt: true });
    expect(outgoingContent({ path: '/m/a.mp3', name: 'a.mp3', kind: 'audio' }, 'audio')).toMatchObject({ ptt: false });
    expect(outgoingContent({ path: '/m/p.png', name: 'p.png', kind: 'image' }, 'image')).toHaveProperty('image');
    expect(outgoingContent({ path: '/m/r.pdf', name: 'report.pdf', kind: 'file' }, 'file')).toMatchObject({
      fileName: 'report.pdf',
      mimetype: 'application/pdf',
    });
  });

  it('renders Markdown as WhatsApp formatting', () => {
    const out = renderMarkdown('**bold** _it_ ~~gone~~ `x` [site](https://example.com)\n\n```\ncode\n```', 'whatsapp');
    expect(out).toContain('*bold*');
    expect(out).toContain('_it_');
    expect(out).toContain('~gone~');
    expect(out).toContain('site (https://example.com)');
    expect(out).toContain('```\ncode\n```');
  });
});

describe('state on disk', () => {
  it('writes Baileys’ multi-file layout (0600 files in a 0700 folder) that useMultiFileAuthState reads back', async () => {
    const folder = join(tempDir(), 'whatsapp-auth');
    const store = await authStoreFor(baileys, folder);
    await store.saveCreds();
    await store.keys.set({
      'pre-key': { '1': baileys.Curve.generateKeyPair() },
      session: { '49:1.0': new Uint8Array([1, 2]) },
    });
    await store.keys.set({ session: { '../../escape': new Uint8Array([9]) } });
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    const files = readdirSync(folder).sort();
    expect(files).toEqual(['creds.json', 'pre-key-1.json', 'session-49-1.0.json']);
    for (const file of files) expect(statSync(join(folder, file)).mode & 0o777).toBe(0o600);
    const upstream = await baileys.useMultiFileAuthState(folder);
    expect(Buffer.from(upstream.state.creds.noiseKey.public)).toEqual(Buffer.from(store.creds.noiseKey.public));
    const keys = await upstream.state.keys.get('pre-key', ['1']);
    expect(keys['1']?.public).toBeDefined();
  });

  it('reads a session upstream’s bridge saved', async () => {
    const folder = tempDir();
    const upstream = await baileys.useMultiFileAuthState(folder);
    await upstream.saveCreds();
    const ours = await openAuthStore(folder, {
      BufferJSON: baileys.BufferJSON,
      initAuthCreds: baileys.initAuthCreds,
      appStateKey: (v) => v,
    });
    expect(ours.creds.registrationId).toBe(upstream.state.creds.registrationId);
  });

  it('remembers answered message ids across restarts, and survives a corrupt file', async () => {
    const path = join(tempDir(), 'whatsapp', 'seen-ids.json');
    const seen = await SeenIds.open(path);
    await seen.add('chat/1');
    expect((await SeenIds.open(path)).has('chat/1')).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    writeFileSync(path, '{not json');
    expect((await SeenIds.open(path)).has('chat/1')).toBe(false);
  });

  it('lets a reply’s encryption see the session a decryption under another key just stepped (no reused message key)', async () => {
    const saved: Record<string, unknown> = { 'phone.0': 'session before' };
    const memory = {
      get: async (_type: string, ids: string[]) => Object.fromEntries(ids.map((id) => [id, saved[id]])),
      set: async (data: Record<string, Record<string, unknown>>) => void Object.assign(saved, data.session),
    } as unknown as Parameters<typeof baileys.addTransactionCapability>[0];
    const keys = baileys.addTransactionCapability(memory, silentBaileysLogger, {
      maxCommitRetries: 1,
      delayBetweenTriesMs: 0,
    });
    oneSignalTransactionAtATime({ authState: { creds: baileys.initAuthCreds(), keys } });
    let release = (): void => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Baileys decrypts a message from the phone under the sender's key and steps the session…
    const decrypting = keys.transaction(async () => {
      await keys.set({ session: { 'phone.0': 'session after' } } as never);
      await gate;
    }, 'phone@s.whatsapp.net');
    // …while a reply to the same phone is encrypted under the account's key.
    const encrypting = keys.transaction(
      async () => (await keys.get('session', ['phone.0']))['phone.0'],
      'me@s.whatsapp.net',
    );
    // Every promise job runs first (the store is in memory): unpatched, the reply has read the session by then.
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await decrypting;
    expect(await encrypting).toBe('session after');
  });
});

const silentBaileysLogger = {
  level: 'silent',
  child: () => silentBaileysLogger,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
