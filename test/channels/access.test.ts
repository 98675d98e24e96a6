import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type AccessSettings, decideAccess, isOwner, listNames, type Sender } from '../../src/channels/access.js';
import { RecentIds } from '../../src/channels/dedup.js';
import { formatCode, normalizeCode, PAIRING_CODE_TTL_MS, PairingStore } from '../../src/channels/pairing.js';
import { runPairingCommand } from '../../src/channels/pairing-command.js';

const settings = (overrides: Partial<AccessSettings> = {}): AccessSettings => ({
  allowFrom: [],
  groupPolicy: 'mention',
  groupAllowFrom: [],
  ...overrides,
});
const alice = { id: '100', username: 'Alice' };
const nobodyPaired = () => false;
const direct = (sender: Sender = alice) => ({ sender, chatId: sender.id, chatType: 'direct' as const });
const group = (mentioned: boolean, sender: Sender = alice) => ({
  sender,
  chatId: '-5',
  chatType: 'group' as const,
  mentioned,
});

describe('access', () => {
  it('denies by default: an empty allowFrom lets nobody in, strangers in a DM get a pairing code', () => {
    expect(decideAccess(settings(), direct(), nobodyPaired)).toEqual({ action: 'pair' });
    expect(decideAccess(settings(), group(true), nobodyPaired)).toMatchObject({ action: 'ignore' });
  });

  it('matches ids exactly and usernames only as @name, in any case; "*" allows everyone', () => {
    expect(listNames(['100'], alice)).toBe(true);
    expect(listNames(['1000'], alice)).toBe(false);
    expect(listNames(['@alice'], alice)).toBe(true);
    expect(listNames(['@ALICE'], alice)).toBe(true);
    expect(listNames(['alice'], alice)).toBe(false);
    expect(listNames(['@bob'], alice)).toBe(false);
    expect(listNames(['@alice'], { id: '100' })).toBe(false);
    expect(decideAccess(settings({ allowFrom: ['*'] }), direct(), nobodyPaired)).toEqual({ action: 'accept' });
    expect(decideAccess(settings(), direct(), (id) => id === '100')).toEqual({ action: 'accept' });
  });

  it('answers in groups as groupPolicy says, and only to allowed senders', () => {
    const allowed = { allowFrom: ['@alice'] };
    expect(decideAccess(settings(allowed), group(false), nobodyPaired)).toMatchObject({ action: 'ignore' });
    expect(decideAccess(settings(allowed), group(true), nobodyPaired)).toEqual({ action: 'accept' });
    expect(decideAccess(settings({ ...allowed, groupPolicy: 'open' }), group(false), nobodyPaired)).toEqual({
      action: 'accept',
    });
    const allowlist = settings({ ...allowed, groupPolicy: 'allowlist', groupAllowFrom: ['-5'] });
    expect(decideAccess(allowlist, group(false), nobodyPaired)).toEqual({ action: 'accept' });
    expect(decideAccess(allowlist, { ...group(true), chatId: '-6' }, nobodyPaired)).toMatchObject({ action: 'ignore' });
    const stranger = { id: '9' };
    expect(decideAccess(settings({ groupPolicy: 'open' }), group(true, stranger), nobodyPaired)).toMatchObject({
      action: 'ignore',
    });
  });

  it('counts only senders named in allowFrom as owners (not "*", not paired)', () => {
    expect(isOwner(settings({ allowFrom: ['@alice'] }), alice)).toBe(true);
    expect(isOwner(settings({ allowFrom: ['*'] }), alice)).toBe(false);
  });

  it('remembers recent message ids and forgets the oldest beyond its capacity', () => {
    const recent = new RecentIds(2);
    expect(recent.seen('a')).toBe(false);
    expect(recent.seen('a')).toBe(true);
    recent.seen('b');
    recent.seen('c');
    expect(recent.seen('a')).toBe(false);
    expect(recent.seen('c')).toBe(true);
  });
});

describe('PairingStore', () => {
  const newStore = (now = () => 1_000_000) => {
    const dir = join(mkdtempSync(join(tmpdir(), 'nb-pairing-')), 'pairing');
    return { dir, store: new PairingStore({ dir, now }) };
  };

  it('issues one 8-character code per sender, valid 10 minutes, in a private file', async () => {
    let now = 1_000_000;
    const { dir, store } = newStore(() => now);
    const first = await store.requestCode('telegram', { id: '7', username: 'eve' }, '7');
    expect(first.created).toBe(true);
    expect(first.code).toMatch(/^[A-HJ-NP-Z2-9]{8}$/);
    expect(formatCode(first.code)).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    expect(await store.requestCode('telegram', { id: '7' }, '7')).toEqual({ code: first.code, created: false });
    expect(statSync(join(dir, '..', 'pairing.json')).mode & 0o777).toBe(0o600);
    expect(store.listPending()).toMatchObject([{ channel: 'telegram', senderId: '7', username: 'eve', chatId: '7' }]);

    now += PAIRING_CODE_TTL_MS + 1;
    expect(store.listPending()).toEqual([]);
    expect(await store.approve(first.code)).toBeUndefined();
    expect((await store.requestCode('telegram', { id: '7' }, '7')).code).not.toBe(first.code);
  });

  it('approves by code (any spelling) across channels, and another process sees it at once', async () => {
    const { dir, store } = newStore();
    const { code } = await store.requestCode('discord', { id: '42' }, 'dm-42');
    const gateway = new PairingStore({ dir, now: () => 1_000_000 });
    expect(gateway.isApproved('discord', '42')).toBe(false);
    const approved = await store.approve(formatCode(code).toLowerCase());
    expect(approved).toEqual({ channel: 'discord', senderId: '42', chatId: 'dm-42' });
    expect(gateway.isApproved('discord', '42')).toBe(true);
    expect(gateway.isApproved('telegram', '42')).toBe(false);
    expect(await store.revoke('discord', '42')).toBe(true);
    expect(gateway.isApproved('discord', '42')).toBe(false);
    expect(normalizeCode(' abcd-efgh ')).toBe('ABCDEFGH');
  });

  it('denies a code without approving anyone', async () => {
    const { store } = newStore();
    const { code } = await store.requestCode('telegram', { id: '8' }, '8');
    expect(await store.deny(code)).toMatchObject({ senderId: '8' });
    expect(store.isApproved('telegram', '8')).toBe(false);
    expect(store.listPending()).toEqual([]);
  });

  it('reads a damaged file as empty instead of failing, and accepts a hand-written list of ids', () => {
    const { dir, store } = newStore();
    const file = join(dir, 'telegram.json');
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, '{ not json');
    expect(store.isApproved('telegram', '1')).toBe(false);
    writeFileSync(file, JSON.stringify({ approved: ['1', 2] }));
    expect(store.isApproved('telegram', '1')).toBe(true);
    expect(store.isApproved('telegram', '2')).toBe(true);
  });

  it('names the damaged pairing file and the bad part, and keeps reading the good parts', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'nb-pairing-')), 'pairing');
    const warnings: string[] = [];
    const log = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} };
    const store = new PairingStore({ dir, now: () => 1_000_000, log });
    const file = join(dir, 'telegram.json');
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, '{ not json');
    expect(store.isApproved('telegram', '1')).toBe(false);
    expect(warnings).toEqual([
      expect.stringMatching(/^pairing file .*telegram\.json is not valid JSON: .*; read as empty$/),
    ]);
    const good = { code: 'ABCDEFGH', senderId: '9', chatId: '9', createdAt: 1, expiresAt: 2_000_000 };
    writeFileSync(file, JSON.stringify({ approved: { '1': 'yes' }, pending: [good, { code: 5 }] }));
    warnings.length = 0;
    expect(store.isApproved('telegram', '1')).toBe(false);
    expect(store.listPending()).toMatchObject([{ senderId: '9' }]);
    expect(warnings).toEqual([
      expect.stringMatching(/telegram\.json: approved: .*; ignored$/),
      expect.stringMatching(/telegram\.json: pending\.1: code: .*expected string.*; dropped$/),
    ]);
    writeFileSync(file, '[]');
    warnings.length = 0;
    expect(store.isApproved('telegram', '1')).toBe(false);
    expect(warnings).toEqual([expect.stringMatching(/telegram\.json has the wrong shape: .*expected object/)]);
  });

  it('runs /pairing list | approve | deny | revoke as text commands', async () => {
    const { store } = newStore(() => Date.now());
    expect((await runPairingCommand(store, '')).reply).toBe('No pending pairing requests.');
    const { code } = await store.requestCode('telegram', { id: '5', username: 'bob' }, '5');
    expect((await runPairingCommand(store, 'list')).reply).toMatch(
      new RegExp(`${formatCode(code)}\\s+telegram\\s+@bob \\(5\\)`),
    );
    const result = await runPairingCommand(store, `approve ${code}`);
    expect(result.reply).toBe('Approved @bob (5) on telegram. They can talk to the agent now.');
    expect(result.approved).toMatchObject({ channel: 'telegram', chatId: '5' });
    expect((await runPairingCommand(store, 'list')).reply).toContain('Approved by pairing:\n- telegram  @bob (5)');
    expect((await runPairingCommand(store, 'approve ZZZZ-ZZZZ')).reply).toMatch(/No pending pairing request/);
    expect((await runPairingCommand(store, 'revoke telegram 5')).reply).toMatch(/^Revoked 5 on telegram/);
    expect((await runPairingCommand(store, 'frobnicate')).reply).toMatch(/^Unknown subcommand/);
  });
});
