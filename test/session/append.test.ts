import { appendFileSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/providers/types.js';
import { JsonlSessionStore, type JsonlSessionStoreOptions } from '../../src/session/jsonl-store.js';
import { createLogger } from '../../src/util/log.js';

async function setup(options: JsonlSessionStoreOptions = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'nb-append-'));
  const warnings: string[] = [];
  const log = createLogger('warn', (l) => warnings.push(l));
  const sessions = new JsonlSessionStore(dir, log, options);
  return { dir, warnings, sessions, log, path: (key: string) => sessions.pathFor(key) };
}

const user = (content: string): ChatMessage => ({ role: 'user', content, timestamp: '2026-01-01T00:00:00.000Z' });
const reply = (content: string): ChatMessage => ({ role: 'assistant', content });
const linesOf = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);
const metadataLines = (path: string) => linesOf(path).filter((l) => l.includes('"_type":"metadata"'));

/** A store with one saved session of two messages. */
async function saved(options: JsonlSessionStoreOptions = {}) {
  const env = await setup(options);
  const session = await env.sessions.load('k');
  session.messages.push(user('one'), reply('two'));
  await env.sessions.save(session);
  return { ...env, session, file: env.path('k') };
}

describe('JsonlSessionStore appends', () => {
  it('appends new messages without rewriting the file, and keeps its first line current in place', async () => {
    const { sessions, session, file } = await saved();
    const before = statSync(file);
    const firstLine = linesOf(file)[0] ?? '';
    session.messages.push(user('three'), reply('four'));
    await sessions.save(session);

    // After a rewrite the first append also carries a metadata line: what a torn first line falls back on.
    const messages = `${JSON.stringify(user('three'))}\n${JSON.stringify(reply('four'))}\n`;
    const mid = statSync(file);
    expect(mid.ino).toBe(before.ino);
    expect(readFileSync(file, 'utf8').slice(before.size).startsWith(messages)).toBe(true);
    expect(metadataLines(file)).toHaveLength(2);
    const current = linesOf(file)[0] ?? '';
    expect(current.length).toBe(firstLine.length); // overwritten in place, same width
    expect(JSON.parse(current).updated_at).toBe(session.updatedAt);

    // Later appends are the messages alone; the first line still follows.
    session.messages.push(user('five'));
    await sessions.save(session);
    const added = `${JSON.stringify(user('five'))}\n`;
    const after = statSync(file);
    expect(after.ino).toBe(before.ino);
    expect(after.size).toBe(mid.size + Buffer.byteLength(added));
    expect(readFileSync(file, 'utf8').endsWith(added)).toBe(true);
    expect(JSON.parse(linesOf(file)[0] ?? '').updated_at).toBe(session.updatedAt);
    expect(after.mode & 0o777).toBe(0o600);
    const fresh = new JsonlSessionStore(sessions.dir);
    const loaded = await fresh.load('k');
    expect(loaded.messages.map((m) => m.content)).toEqual(['one', 'two', 'three', 'four', 'five']);
    expect(loaded.updatedAt).toBe(session.updatedAt);
  });

  it('appends one metadata line when metadata changes, and the last one wins on load', async () => {
    const { sessions, session, file } = await saved();
    const lineCount = linesOf(file).length;
    session.metadata.pending_user_turn = true;
    session.lastConsolidated = 1;
    await sessions.save(session);
    expect(linesOf(file)).toHaveLength(lineCount + 1);
    expect(metadataLines(file)).toHaveLength(2);

    const loaded = await new JsonlSessionStore(sessions.dir).load('k');
    expect(loaded.metadata).toEqual({ pending_user_turn: true });
    expect(loaded.lastConsolidated).toBe(1);
    expect(loaded.messages).toHaveLength(2);
  });

  it('writes nothing when nothing changed', async () => {
    const { sessions, session, file } = await saved();
    const before = statSync(file);
    await sessions.save(session);
    const after = statSync(file);
    expect([after.size, after.mtimeMs, after.ino]).toEqual([before.size, before.mtimeMs, before.ino]);
  });

  it('rewrites atomically when saved messages are removed (/new)', async () => {
    const { sessions, session, file } = await saved();
    const before = statSync(file);
    session.messages = [];
    session.metadata = {};
    await sessions.save(session);
    expect(statSync(file).ino).not.toBe(before.ino);
    expect(linesOf(file)).toHaveLength(1);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await new JsonlSessionStore(sessions.dir).load('k')).messages).toEqual([]);
  });

  it('appends when a saved message is replaced by an equal copy, rewrites when it differs', async () => {
    const { sessions, session, file } = await saved();
    const ino = statSync(file).ino;
    session.messages.splice(1, 1, { ...reply('two') }, reply('three'));
    await sessions.save(session);
    expect(statSync(file).ino).toBe(ino);

    session.messages.splice(1, 1, reply('TWO'));
    await sessions.save(session);
    expect(statSync(file).ino).not.toBe(ino);
    expect((await new JsonlSessionStore(sessions.dir).load('k')).messages.map((m) => m.content)).toEqual([
      'one',
      'TWO',
      'three',
    ]);
  });

  it('rewrite() persists an in-place edit that save() cannot see', async () => {
    const { sessions, session } = await saved();
    const first = session.messages[0];
    if (!first) throw new Error('missing message');
    first.content = 'edited';
    await sessions.rewrite(session);
    expect((await new JsonlSessionStore(sessions.dir).load('k')).messages[0]?.content).toBe('edited');
  });

  it('compacts once metadata lines pass the threshold', async () => {
    const { sessions, session, file } = await saved({ compactAfterMetadataLines: 4 });
    const ino = statSync(file).ino;
    for (let i = 0; i < 3; i++) {
      session.metadata.round = i;
      await sessions.save(session);
    }
    expect(metadataLines(file)).toHaveLength(4);
    expect(statSync(file).ino).toBe(ino);

    session.metadata.round = 3;
    session.messages.push(user('after'));
    await sessions.save(session);
    expect(statSync(file).ino).not.toBe(ino);
    expect(metadataLines(file)).toHaveLength(1);
    expect(JSON.parse(linesOf(file)[0] ?? '{}')).toMatchObject({ _type: 'metadata', metadata: { round: 3 } });
    const loaded = await new JsonlSessionStore(sessions.dir).load('k');
    expect(loaded.messages.map((m) => m.content)).toEqual(['one', 'two', 'after']);

    session.metadata.round = 4;
    await sessions.save(session);
    expect(metadataLines(file)).toHaveLength(2);
  });

  it('compacts once superseded metadata takes more than half the file', async () => {
    const { sessions, session, file } = await saved();
    session.metadata.runtime_checkpoint = 'x'.repeat(400_000);
    await sessions.save(session); // outgrew the first line: rewritten, with room to grow
    const ino = statSync(file).ino;
    session.metadata.runtime_checkpoint = 'y'.repeat(400_000);
    await sessions.save(session);
    expect(statSync(file).ino).toBe(ino);
    session.metadata.runtime_checkpoint = 'z'.repeat(400_000);
    await sessions.save(session);
    expect(statSync(file).ino).not.toBe(ino);
    expect(metadataLines(file)).toHaveLength(1);
    expect((await new JsonlSessionStore(sessions.dir).load('k')).metadata.runtime_checkpoint).toMatch(/^z+$/);
  });

  it('recreates the file with its metadata when it was deleted after loading', async () => {
    const { sessions, session, file } = await saved();
    rmSync(file);
    session.messages.push(user('three'));
    await sessions.save(session);
    expect(JSON.parse(linesOf(file)[0] ?? '{}')._type).toBe('metadata');
    expect(linesOf(file)).toHaveLength(4);
  });

  it('saves different sessions concurrently, and concurrent saves of one session append once', async () => {
    const { sessions, path } = await setup();
    const loaded = await Promise.all(['a', 'b', 'c', 'd'].map((key) => sessions.load(key)));
    await Promise.all(loaded.map((s) => sessions.save(s)));
    await Promise.all(
      loaded.map((s) => {
        s.messages.push(user(`hello ${s.key}`), reply(`bye ${s.key}`));
        return sessions.save(s);
      }),
    );
    const a = loaded[0];
    if (!a) throw new Error('missing session');
    a.messages.push(user('again'));
    await Promise.all([sessions.save(a), sessions.save(a), sessions.save(a)]);

    const fresh = new JsonlSessionStore(sessions.dir);
    for (const key of ['b', 'c', 'd']) {
      expect((await fresh.load(key)).messages.map((m) => m.content)).toEqual([`hello ${key}`, `bye ${key}`]);
    }
    expect((await fresh.load('a')).messages.map((m) => m.content)).toEqual(['hello a', 'bye a', 'again']);
    // The metadata line, the first append with its metadata line (a fallback for the first line), then 'again'.
    expect(linesOf(path('a'))).toHaveLength(5);
  });
});

describe('JsonlSessionStore torn tails', () => {
  it('cuts a torn tail found on load before the next append, so nothing is glued onto it', async () => {
    const { sessions, file, warnings } = await saved();
    appendFileSync(file, '{"role":"user","content":"thr');
    const session = await sessions.load('k');
    expect(session.messages).toHaveLength(2);
    session.messages.push(user('three'));
    await sessions.save(session);

    const lines = linesOf(file);
    expect(lines.every((line) => JSON.parse(line))).toBeTruthy();
    const quiet: string[] = [];
    const fresh = new JsonlSessionStore(
      sessions.dir,
      createLogger('warn', (l) => quiet.push(l)),
    );
    expect((await fresh.load('k')).messages.map((m) => m.content)).toEqual(['one', 'two', 'three']);
    expect(quiet).toEqual([]);
    expect(warnings.join('\n')).toMatch(/torn last line/);
  });

  it('cuts a torn tail left by another process after this one loaded', async () => {
    const { sessions, session, file } = await saved();
    appendFileSync(file, '{"role":"tool","content":"half a res');
    session.messages.push(reply('three'));
    await sessions.save(session);
    const loaded = await new JsonlSessionStore(sessions.dir).load('k');
    expect(loaded.messages.map((m) => m.content)).toEqual(['one', 'two', 'three']);
  });

  it('adds the missing newline after a complete last line instead of cutting it', async () => {
    const { sessions, file } = await saved();
    appendFileSync(file, JSON.stringify(user('no newline')));
    const session = await sessions.load('k');
    session.messages.push(reply('after'));
    await sessions.save(session);
    const loaded = await new JsonlSessionStore(sessions.dir).load('k');
    expect(loaded.messages.map((m) => m.content)).toEqual(['one', 'two', 'no newline', 'after']);
  });
});

describe('JsonlSessionStore load cache', () => {
  it('returns fresh data after another store instance appended', async () => {
    const { sessions } = await saved();
    await sessions.load('k'); // cached
    const other = new JsonlSessionStore(sessions.dir);
    const theirs = await other.load('k');
    theirs.messages.push(user('from elsewhere'));
    theirs.metadata.last_channel = 'telegram:1';
    await other.save(theirs);

    const ours = await sessions.load('k');
    expect(ours.messages.map((m) => m.content)).toEqual(['one', 'two', 'from elsewhere']);
    expect(ours.metadata.last_channel).toBe('telegram:1');
  });

  it('returns fresh data after the file was replaced by a hand edit', async () => {
    const { sessions, file } = await saved();
    await sessions.load('k');
    const [meta] = linesOf(file);
    writeFileSync(file, `${meta}\n${JSON.stringify(user('replaced'))}\n`);
    expect((await sessions.load('k')).messages.map((m) => m.content)).toEqual(['replaced']);
  });

  it('hands out copies: unsaved changes to one never leak into the next load', async () => {
    const { sessions } = await saved();
    const first = await sessions.load('k');
    first.messages.push(user('unsaved'));
    first.metadata.dirty = true;
    const second = await sessions.load('k');
    expect(second).not.toBe(first);
    expect(second.messages.map((m) => m.content)).toEqual(['one', 'two']);
    expect(second.metadata).toEqual({});
  });

  it('serves what this store saved without re-reading, and a loaded copy keeps appending', async () => {
    const { sessions, session, file } = await saved();
    session.messages.push(user('three'));
    await sessions.save(session);
    const loaded = await sessions.load('k');
    expect(loaded.messages.map((m) => m.content)).toEqual(['one', 'two', 'three']);
    const ino = statSync(file).ino;
    loaded.messages.push(reply('four'));
    await sessions.save(loaded);
    expect(statSync(file).ino).toBe(ino);
    expect(linesOf(file)).toHaveLength(6); // with the metadata line the first append after a rewrite carries
  });

  it('forgets a deleted session', async () => {
    const { sessions } = await saved();
    await sessions.delete('k');
    expect((await sessions.load('k')).messages).toEqual([]);
  });
});
