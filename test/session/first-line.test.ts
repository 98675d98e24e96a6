/**
 * nanobot's readers take a session's metadata from line 1 only (its session list, the WebUI's `read_metadata`), and
 * its `update_metadata` rewrites line 1 alone. Pinned with upstream's field names: `_type`, `key`, `created_at`,
 * `updated_at`, `metadata`, `last_consolidated`.
 */
import { readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/providers/types.js';
import type { WriteSyscall } from '../../src/security/workspace-file-ops.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { createLogger } from '../../src/util/log.js';
import { upstreamHome } from '../helpers/upstream-homes.js';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const reply = (content: string): ChatMessage => ({ role: 'assistant', content });
const linesOf = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);

/** What nanobot's session list reads: line 1, stripped, parsed as JSON. */
function upstreamFirstLine(path: string): Record<string, unknown> {
  const first = readFileSync(path, 'utf8').split('\n')[0] ?? '';
  return JSON.parse(first.trim()) as Record<string, unknown>;
}

/** nanobot's loader: every line, the last metadata line wins. */
function upstreamLoad(path: string): { metadata: Record<string, unknown>; messages: unknown[] } {
  let metadata: Record<string, unknown> = {};
  const messages: unknown[] = [];
  for (const line of linesOf(path)) {
    if (!line.trim()) continue;
    const data = JSON.parse(line) as Record<string, unknown>;
    if (data._type === 'metadata') metadata = data;
    else messages.push(data);
  }
  return { metadata, messages };
}

async function store(write?: WriteSyscall) {
  const dir = await mkdtemp(join(tmpdir(), 'nb-first-line-'));
  const warnings: string[] = [];
  const log = createLogger('warn', (line) => warnings.push(line));
  return { dir, warnings, sessions: new JsonlSessionStore(dir, log, write ? { writeSync: write } : {}) };
}

describe('the first line of a session file', () => {
  it('holds the current metadata after every save, in nanobot field names', async () => {
    const { sessions } = await store();
    const session = await sessions.load('telegram:42');
    session.messages.push(user('one'), reply('two'));
    await sessions.save(session);
    const path = sessions.pathFor('telegram:42');
    for (let turn = 0; turn < 5; turn++) {
      session.messages.push(user(`q${turn}`), reply(`a${turn}`));
      if (turn % 2 === 0) session.metadata.last_channel = `telegram:${turn}`;
      session.lastConsolidated = turn;
      await sessions.save(session);
      const first = upstreamFirstLine(path);
      expect(first).toEqual({
        _type: 'metadata',
        key: 'telegram:42',
        created_at: session.createdAt,
        updated_at: session.updatedAt,
        metadata: session.metadata,
        last_consolidated: turn,
      });
      // nanobot's loader (last metadata line wins) agrees with its session list.
      const loaded = upstreamLoad(path);
      expect(loaded.metadata.metadata).toEqual(session.metadata);
      expect(loaded.metadata.last_consolidated).toBe(turn);
      expect(loaded.messages).toHaveLength(session.messages.length);
    }
  });

  it('is taken over from nanobot: its update_metadata rewrites line 1 alone (a title), and we keep it', async () => {
    const { sessions, dir } = await store();
    const session = await sessions.load('websocket:c1');
    session.messages.push(user('one'));
    await sessions.save(session);
    session.messages.push(reply('two'));
    session.metadata.last_channel = 'websocket:c1';
    await sessions.save(session);
    const path = sessions.pathFor('websocket:c1');
    // As nanobot's update_metadata does: line 1 with the update, the rest copied, renamed over the file.
    const [first = '', ...rest] = linesOf(path);
    const data = JSON.parse(first) as { metadata: Record<string, unknown> };
    data.metadata = { ...data.metadata, title: 'Trip to Lyon' };
    writeFileSync(`${path}.tmp`, `${[JSON.stringify(data), ...rest].join('\n')}\n`);
    renameSync(`${path}.tmp`, path);

    const loaded = await new JsonlSessionStore(dir).load('websocket:c1');
    expect(loaded.metadata).toEqual({ last_channel: 'websocket:c1', title: 'Trip to Lyon' });
    loaded.messages.push(user('three'));
    await sessions.save(loaded);
    expect((upstreamFirstLine(path).metadata as Record<string, unknown>).title).toBe('Trip to Lyon');
  });

  it('loses no message and no metadata when its in-place update is torn', async () => {
    const { sessions, dir, warnings } = await store();
    const session = await sessions.load('k');
    session.messages.push(user('one'));
    await sessions.save(session);
    session.messages.push(reply('two'));
    session.metadata.pending_user_turn = true;
    await sessions.save(session);
    const path = sessions.pathFor('k');
    // A crash half-way through overwriting line 1: its start is new bytes, its end garbage.
    const [first = '', ...rest] = linesOf(path);
    writeFileSync(path, `${`${first.slice(0, 40)}\u0000garbage`.padEnd(first.length)}\n${rest.join('\n')}\n`);

    const loaded = await new JsonlSessionStore(
      dir,
      createLogger('warn', (l) => warnings.push(l)),
    ).load('k');
    expect(loaded.messages.map((m) => m.content)).toEqual(['one', 'two']);
    expect(loaded.metadata).toEqual({ pending_user_turn: true });
    expect(warnings.join('\n')).toContain('corrupt line 1');
  });

  it('keeps the old first line when the in-place write fails part-way (a full disk)', async () => {
    let failFirstLine = false;
    const write: WriteSyscall = (fd, data, offset, length) => {
      // The in-place write is the one that starts with a metadata line's first bytes.
      if (
        failFirstLine &&
        Buffer.from(data)
          .subarray(offset, offset + 9)
          .toString() === '{"_type":'
      ) {
        writeSync(fd, data, offset, 20);
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      }
      return writeSync(fd, data, offset, length);
    };
    const { sessions, dir } = await store(write);
    const session = await sessions.load('k');
    session.messages.push(user('one'));
    await sessions.save(session);
    session.messages.push(reply('two'));
    await sessions.save(session);
    const path = sessions.pathFor('k');
    const before = linesOf(path)[0];

    failFirstLine = true;
    session.messages.push(user('three'));
    await sessions.save(session); // the message is durable; only line 1 stays behind
    expect(linesOf(path)[0]).toBe(before);
    const loaded = await new JsonlSessionStore(dir).load('k');
    expect(loaded.messages.map((m) => m.content)).toEqual(['one', 'two', 'three']);
  });

  it("is current after we continue a chat in a real upstream home, and upstream's list reads it", async () => {
    const home = upstreamHome('pyhome');
    try {
      const dir = join(home.dataDir, 'sessions', '4e0b97c4dd20245b3ed3fb23ec954aa1');
      const sessions = new JsonlSessionStore(dir);
      const path = sessions.pathFor('cli:direct');
      const original = upstreamFirstLine(path);
      const session = await sessions.load('cli:direct');
      expect(session.messages).toHaveLength(10);
      session.messages.push(user('What is my name?'), reply('Alice.'));
      await sessions.save(session);
      const first = upstreamFirstLine(path);
      expect(first.key).toBe('cli:direct');
      expect(first.created_at).toBe(original.created_at);
      expect(first.updated_at).toBe(session.updatedAt);
      expect(Date.parse(String(first.updated_at))).toBeGreaterThan(Date.parse(`${original.updated_at}Z`) - 86_400_000);
      expect(first.metadata).toEqual(original.metadata);
      expect(upstreamLoad(path).messages).toHaveLength(12);
      // Our next process reads the same.
      const again = await new JsonlSessionStore(dir).load('cli:direct');
      expect(again.messages.at(-1)?.content).toBe('Alice.');
      expect(again.metadata).toEqual(original.metadata);
    } finally {
      home.cleanup();
    }
  });
});
