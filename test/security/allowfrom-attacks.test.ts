/**
 * allowFrom spellings an attacker can exploit: a username chosen to equal an allowed id, `@` and case variants,
 * whitespace, Unicode look-alikes. An entry matches the sender's id exactly; it names a username only as `@name`
 * (ASCII case ignored). The last test drives a real ChatChannel: the stranger's message never reaches the bus.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MessageBus } from '../../src/bus/message-bus.js';
import { decideAccess, isOwner, listNames, type Sender } from '../../src/channels/access.js';
import { ChatChannel } from '../../src/channels/chat-channel.js';
import { PairingStore } from '../../src/channels/pairing.js';
import { channelSettingsSchema } from '../../src/channels/settings.js';
import { telegramSettingsSchema } from '../../src/channels/telegram/index.js';
import { eventually } from '../channels/contract.js';
import { MemoryPlatform } from '../channels/memory-platform.js';

const OWNER_ID = '123456789012345678';

/** [allowFrom entry, attacker] pairs that must NOT match. */
const ATTACKS: [string, Sender][] = [
  // A username equal to an allowed id (Discord usernames may be all digits).
  [OWNER_ID, { id: '999', username: OWNER_ID }],
  [OWNER_ID, { id: '999', username: `@${OWNER_ID}` }],
  [` ${OWNER_ID} `, { id: '999', username: OWNER_ID }],
  ['alice', { id: '999', username: 'alice' }],
  ['Alice', { id: '999', username: 'alice' }],
  ['ALICE', { id: '999', username: 'Alice' }],
  ['u12345', { id: '999', username: 'U12345' }],
  // An id entry is exact: no case folding, no trimming of the sender id, no prefixes.
  ['U12345', { id: 'u12345' }],
  ['U12345', { id: ' U12345' }],
  ['U12345', { id: 'U12345 ' }],
  ['12345', { id: '012345' }],
  ['12345', { id: '+12345' }],
  ['12345', { id: '12345.0' }],
  ['12345', { id: '１２３４５' }],
  ['12345', { id: '12345\u200b' }],
  ['12345', { id: '1234' }],
  ['12345', { id: '123456' }],
  ['@12345', { id: '12345' }],
  ['@alice:example.org', { id: '@alice:evil.org', username: 'alice' }],
  // `@name` entries: Unicode look-alikes and invisible characters do not fold into the ASCII name.
  ['@kate', { id: '999', username: '\u212Aate' }], // KELVIN SIGN lower-cases to k
  ['@alice', { id: '999', username: 'аlice' }], // Cyrillic а
  ['@alice', { id: '999', username: 'ａｌｉｃｅ' }], // fullwidth
  ['@alice', { id: '999', username: 'alice\u200b' }],
  ['@alice', { id: '999', username: ' alice' }],
  ['@alice', { id: '999', username: 'alice ' }],
  ['@alice', { id: '999', username: 'alic' }],
  ['@alice', { id: '999', username: 'alice_' }],
  ['@istanbul', { id: '999', username: 'İstanbul' }], // U+0130 lower-cases to i + combining dot
  ['@alice', { id: '999' }],
  ['@alice', { id: 'alice' }],
  ['@', { id: '999', username: '' }],
  ['@@alice', { id: '999', username: 'alice' }],
  ['', { id: '' }],
  ['  ', { id: '' }],
  ['', { id: '999', username: '' }],
];

/** [allowFrom entry, sender] pairs that must match. */
const LEGITIMATE: [string, Sender][] = [
  [OWNER_ID, { id: OWNER_ID, username: 'owner' }],
  [` ${OWNER_ID}\t`, { id: OWNER_ID }],
  ['@alice', { id: '999', username: 'alice' }],
  ['@Alice', { id: '999', username: 'alice' }],
  ['@alice', { id: '999', username: 'ALICE' }],
  [' @alice ', { id: '999', username: 'alice' }],
  ['@alice', { id: '999', username: '@alice' }],
  // Matrix ids start with @ and match as ids.
  ['@alice:example.org', { id: '@alice:example.org', username: 'alice' }],
  ['@alice:example.org', { id: '@alice:example.org' }],
  ['alice@example.com', { id: 'alice@example.com' }],
];

describe('allowFrom: ids exactly, usernames only as @name', () => {
  it.each(ATTACKS)('entry %j does not admit %j', (entry, sender) => {
    expect(listNames([entry], sender)).toBe(false);
    const settings = { allowFrom: [entry], groupPolicy: 'open' as const, groupAllowFrom: [] };
    expect(decideAccess(settings, { sender, chatId: sender.id, chatType: 'direct' }, () => false)).toEqual({
      action: 'pair',
    });
    expect(decideAccess(settings, { sender, chatId: '-1', chatType: 'group', mentioned: true }, () => false)).toEqual(
      expect.objectContaining({ action: 'ignore' }),
    );
    expect(isOwner(settings, sender)).toBe(false);
  });

  it.each(LEGITIMATE)('entry %j admits %j', (entry, sender) => {
    expect(listNames([entry], sender)).toBe(true);
  });

  it('keeps "*" and the empty list as they were: everyone, and nobody (strangers pair in DMs)', () => {
    const stranger = { id: '999', username: 'mallory' };
    const request = { sender: stranger, chatId: '999', chatType: 'direct' as const };
    const star = { allowFrom: ['*'], groupPolicy: 'mention' as const, groupAllowFrom: [] };
    expect(decideAccess(star, request, () => false)).toEqual({ action: 'accept' });
    expect(isOwner(star, stranger)).toBe(false);
    const empty = { ...star, allowFrom: [] };
    expect(decideAccess(empty, request, () => false)).toEqual({ action: 'pair' });
    expect(decideAccess(empty, { ...request, chatType: 'group', mentioned: true }, () => false)).toMatchObject({
      action: 'ignore',
    });
    // Approved by pairing: by id only.
    expect(decideAccess(empty, request, (id) => id === '999')).toEqual({ action: 'accept' });
    expect(decideAccess(empty, request, (id) => id === 'mallory')).toEqual({ action: 'pair' });
  });

  it('reads Telegram’s legacy bare usernames (which can never be ids) as @name, and ids as ids', () => {
    const parsed = telegramSettingsSchema.parse({
      allowFrom: ['alice_bot', 12345, '-100200', '@Bob', '*', ' carol5 '],
    });
    expect(parsed.allowFrom).toEqual(['@alice_bot', '12345', '-100200', '@Bob', '*', '@carol5']);
    expect(listNames(parsed.allowFrom, { id: '777', username: 'Alice_Bot' })).toBe(true);
    // Other channels keep bare entries as ids: a Discord user named "alice_bot" is not admitted by them.
    expect(channelSettingsSchema.parse({ allowFrom: ['alice_bot'] }).allowFrom).toEqual(['alice_bot']);
    expect(listNames(['alice_bot'], { id: '777', username: 'alice_bot' })).toBe(false);
  });

  it('through a real ChatChannel: a user whose username is the owner’s id gets a pairing code, never the agent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nb-allowfrom-'));
    const platform = new MemoryPlatform();
    const bus = new MessageBus();
    const settings = channelSettingsSchema.parse({ allowFrom: [OWNER_ID] });
    const channel = new ChatChannel({
      name: 'memory',
      platform,
      settings: () => settings,
      pairing: new PairingStore({ dir: join(dir, 'pairing') }),
      mediaDir: join(dir, 'media'),
    });
    await channel.start(bus);
    try {
      const link = platform.link;
      if (!link) throw new Error('platform not connected');
      await link.receive({
        id: 'm1',
        chatId: '999',
        chatType: 'direct',
        sender: { id: '999', username: OWNER_ID },
        text: 'hello, I am the owner',
      });
      await link.receive({
        id: 'm2',
        chatId: OWNER_ID,
        chatType: 'direct',
        sender: { id: OWNER_ID, username: 'owner' },
        text: 'the real owner',
      });
      const inbound = await bus.consumeInbound();
      expect(inbound).toMatchObject({ senderId: OWNER_ID, content: 'the real owner' });
      await eventually(() => expect(platform.messages.map((m) => m.target.chatId)).toContain('999'));
      expect(platform.messages.find((m) => m.target.chatId === '999')?.text).toMatch(/pairing|code/i);
    } finally {
      await channel.stop();
    }
  });
});
