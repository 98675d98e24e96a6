/**
 * Pairing approvals carry over between nanobot and us: both use `~/.nanobot/pairing.json` in nanobot's shape
 * (nanobot/pairing/store.py): `approved: { <channel>: [sender ids] }`, `pending: { "ABCD-EFGH": { channel, sender_id,
 * created_at, expires_at } }`, times in seconds. Our earlier `pairing/<channel>.json` files are folded in.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatCode, PairingStore } from '../../src/channels/pairing.js';

const NOW_MS = 1_796_152_830_000;

function home() {
  const dataDir = mkdtempSync(join(tmpdir(), 'nb-pairing-up-'));
  const store = new PairingStore({ dir: join(dataDir, 'pairing'), now: () => NOW_MS });
  return { dataDir, store, file: join(dataDir, 'pairing.json') };
}

/** nanobot's `is_approved` and `list_pending` over the file, by its own rules. */
function upstreamView(file: string, nowS = NOW_MS / 1000) {
  const data = JSON.parse(readFileSync(file, 'utf8')) as {
    approved?: Record<string, unknown>;
    pending?: Record<string, Record<string, unknown>>;
  };
  const approved = (channel: string, sender: string) => {
    const users = data.approved?.[channel];
    return Array.isArray(users) && users.map(String).includes(sender);
  };
  const pending = Object.entries(data.pending ?? {})
    .filter(([, p]) => typeof p.channel === 'string' && p.sender_id != null)
    .filter(([, p]) => typeof p.expires_at === 'number' && p.expires_at >= nowS)
    .map(([code, p]) => ({ code, channel: p.channel, sender_id: p.sender_id }));
  return { approved, pending };
}

describe("nanobot's pairing.json", () => {
  it('is read as nanobot writes it: approved senders and pending codes carry over', async () => {
    const { file, store } = home();
    // json.dumps(payload, indent=2) of nanobot's _save.
    const written = {
      approved: { telegram: ['1001', '42'], discord: ['555'] },
      pending: {
        'ABCD-EFGH': { channel: 'telegram', sender_id: '77', created_at: 1796152800.25, expires_at: 1796153400.25 },
        'ZZZZ-ZZZZ': { channel: 'telegram', sender_id: '78', created_at: 1796150000.0, expires_at: 1796150600.0 },
      },
    };
    writeFileSync(file, JSON.stringify(written, null, 2));
    expect(store.isApproved('telegram', '42')).toBe(true);
    expect(store.isApproved('telegram', '1001')).toBe(true);
    expect(store.isApproved('discord', '555')).toBe(true);
    expect(store.isApproved('discord', '42')).toBe(false);
    expect(store.listPending()).toMatchObject([{ channel: 'telegram', senderId: '77', code: 'ABCDEFGH' }]);

    const approved = await store.approve('abcd-efgh');
    expect(approved).toMatchObject({ channel: 'telegram', senderId: '77' });
    const view = upstreamView(file);
    expect(view.approved('telegram', '77')).toBe(true);
    expect(view.approved('telegram', '42')).toBe(true);
    expect(view.approved('discord', '555')).toBe(true);
    expect(view.pending).toEqual([]); // the expired one was dropped, as nanobot's _gc_pending does
  });

  it('is what we write, so nanobot sees our codes and approvals', async () => {
    const { file, store } = home();
    const { code } = await store.requestCode('telegram', { id: '9', username: 'eve' }, 'chat-9');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const raw = JSON.parse(readFileSync(file, 'utf8'));
    expect(raw.pending[formatCode(code)]).toMatchObject({ channel: 'telegram', sender_id: '9' });
    const entry = raw.pending[formatCode(code)];
    expect(entry.expires_at - entry.created_at).toBe(600);
    expect(entry.expires_at).toBeCloseTo(NOW_MS / 1000 + 600, 3);
    expect(upstreamView(file).pending).toEqual([{ code: formatCode(code), channel: 'telegram', sender_id: '9' }]);

    await store.approve(code);
    expect(JSON.parse(readFileSync(file, 'utf8')).approved).toEqual({ telegram: ['9'] });
    expect(upstreamView(file).approved('telegram', '9')).toBe(true);
    await store.revoke('telegram', '9');
    expect(upstreamView(file).approved('telegram', '9')).toBe(false);
  });

  it('keeps working after nanobot rewrote it (dropping the fields it does not know)', async () => {
    const { file, store } = home();
    const { code } = await store.requestCode('slack', { id: 'U1', username: 'ann' }, 'D1');
    await store.approve(code);
    // nanobot's _save writes only approved and pending.
    const raw = JSON.parse(readFileSync(file, 'utf8'));
    writeFileSync(file, JSON.stringify({ approved: raw.approved, pending: raw.pending }, null, 2));
    expect(store.isApproved('slack', 'U1')).toBe(true);
    expect(store.approved('slack')).toEqual({ U1: { approvedAt: '' } });
  });

  it("folds an earlier version's pairing/<channel>.json in, and keeps the old file renamed", async () => {
    const { dataDir, file, store } = home();
    mkdirSync(join(dataDir, 'pairing'));
    const legacy = join(dataDir, 'pairing', 'telegram.json');
    writeFileSync(
      legacy,
      JSON.stringify({ approved: { '5': { username: 'bob', approvedAt: '2026-01-01T00:00:00.000Z' } }, pending: [] }),
    );
    expect(store.isApproved('telegram', '5')).toBe(true);
    expect(existsSync(file)).toBe(false);

    await store.requestCode('discord', { id: '6' }, '6');
    expect(upstreamView(file).approved('telegram', '5')).toBe(true);
    expect(existsSync(legacy)).toBe(false);
    expect(existsSync(`${legacy}.migrated`)).toBe(true);
    expect(store.approved('telegram')).toEqual({ '5': { username: 'bob', approvedAt: '2026-01-01T00:00:00.000Z' } });
    expect(new PairingStore({ dir: join(dataDir, 'pairing') }).isApproved('telegram', '5')).toBe(true);
  });

  it('reads a damaged file as empty and names it, without crashing', () => {
    const warnings: string[] = [];
    const dataDir = mkdtempSync(join(tmpdir(), 'nb-pairing-up-'));
    const log = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} };
    const store = new PairingStore({ dir: join(dataDir, 'pairing'), log });
    const file = join(dataDir, 'pairing.json');
    for (const text of ['{ not json', '[]', '{"approved": {"telegram": "42"}}', '{"pending": {"X": 5}}']) {
      writeFileSync(file, text);
      warnings.length = 0;
      expect(store.isApproved('telegram', '42')).toBe(false);
      expect(store.listPending()).toEqual([]);
      expect(warnings.join('\n')).toContain('pairing.json');
    }
  });
});
