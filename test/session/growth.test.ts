/**
 * A store that has a session cached reads only the lines another writer appended since — and the whole file
 * whenever it was changed any other way. Also: restarts, and when superseded metadata is compacted.
 */
import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/providers/types.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import type { Session } from '../../src/session/types.js';
import { createLogger } from '../../src/util/log.js';

const user = (content: string): ChatMessage => ({ role: 'user', content, timestamp: '2026-01-01T00:00:00.000Z' });
const reply = (content: string): ChatMessage => ({ role: 'assistant', content });
const contents = (session: Session) => session.messages.map((m) => m.content);
const linesOf = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);

async function setup(count = 2) {
  const dir = await mkdtemp(join(tmpdir(), 'nb-growth-'));
  const warnings: string[] = [];
  const ours = new JsonlSessionStore(
    dir,
    createLogger('warn', (l) => warnings.push(l)),
  );
  const session = await ours.load('k');
  for (let i = 0; i < count; i++) session.messages.push(i % 2 ? reply(`m${i}`) : user(`m${i}`));
  await ours.save(session);
  const cached = await ours.load('k');
  return { dir, ours, cached, warnings, file: ours.pathFor('k') };
}

/** What a store that never saw the file loads: the reference for every other load. */
const freshLoad = (dir: string) => new JsonlSessionStore(dir).load('k');

describe('JsonlSessionStore after another writer', () => {
  it('reads only the lines another store appended: messages, metadata and typed lines', async () => {
    const { dir, ours, cached, file } = await setup();
    const writer = new JsonlSessionStore(dir);
    const theirs = await writer.load('k');
    theirs.messages.push(user('from elsewhere'), reply('answer'));
    theirs.metadata.last_channel = 'telegram:1';
    theirs.lastConsolidated = 1;
    await writer.save(theirs);
    appendFileSync(file, `${JSON.stringify({ _type: 'provider_state', id: 'x' })}\n`);

    const loaded = await ours.load('k');
    const expected = await freshLoad(dir);
    expect(loaded.messages).toEqual(expected.messages);
    expect(loaded.metadata).toEqual({ last_channel: 'telegram:1' });
    expect(loaded.lastConsolidated).toBe(1);
    expect(loaded.preserved).toEqual([{ _type: 'provider_state', id: 'x' }]);
    expect(loaded.messages[0]).toBe(cached.messages[0]); // what it had was not parsed again
  });

  it('keeps the message objects of what it had when only lines were appended', async () => {
    const { dir, ours, cached } = await setup();
    const writer = new JsonlSessionStore(dir);
    const theirs = await writer.load('k');
    theirs.messages.push(user('more'));
    await writer.save(theirs);

    const loaded = await ours.load('k');
    expect(contents(loaded)).toEqual(['m0', 'm1', 'more']);
    expect(loaded.messages[0]).toBe(cached.messages[0]); // not parsed again

    // And it appends after them as if it had written them itself.
    loaded.messages.push(reply('ours'));
    await ours.save(loaded);
    expect(contents(await freshLoad(dir))).toEqual(['m0', 'm1', 'more', 'ours']);
  });

  it('reads the whole file when it was rewritten in place, even into a longer one', async () => {
    const { dir, ours, file } = await setup();
    const ino = statSync(file).ino;
    const [, ...messages] = linesOf(file);
    // Another program rewrites the same inode: a new first line, other messages, a longer file.
    const header = JSON.stringify({ _type: 'metadata', key: 'k', metadata: { by: 'python' }, last_consolidated: 0 });
    const others = [user('x'.repeat(200)), reply('y'.repeat(200)), ...messages.map((l) => JSON.parse(l))];
    writeFileSync(file, `${[header, ...others.map((m) => JSON.stringify(m))].join('\n')}\n`);
    expect(statSync(file).ino).toBe(ino);

    const loaded = await ours.load('k');
    expect(contents(loaded)).toEqual(contents(await freshLoad(dir)));
    expect(loaded.metadata).toEqual({ by: 'python' });
  });

  it('reads the whole file when its start is unchanged but what it had ends differently', async () => {
    const { ours, file } = await setup(4);
    const lines = linesOf(file);
    // Same first line and a longer file, but the old last line was replaced: not an append.
    lines[lines.length - 1] = JSON.stringify(reply('changed'));
    writeFileSync(file, `${[...lines, JSON.stringify(user('new'))].join('\n')}\n`);
    const loaded = await ours.load('k');
    expect(contents(loaded)).toEqual(['m0', 'm1', 'm2', 'changed', 'new']);
  });

  it('reads the whole file when only its first line changed and lines were added', async () => {
    const { dir, ours, file } = await setup();
    const session = await ours.load('k');
    session.messages.push(reply('z'.repeat(1_000)));
    await ours.save(session);
    await ours.load('k');
    const [first = '', ...rest] = linesOf(file);
    const changed = first.replace(/"created_at":"\d/, '"created_at":"9'); // same length, same end of file
    expect(changed).not.toBe(first);
    writeFileSync(file, `${[changed, ...rest, JSON.stringify(user('new'))].join('\n')}\n`);
    const loaded = await ours.load('k');
    expect(loaded.createdAt).toMatch(/^9/);
    expect(loaded.createdAt).toBe((await freshLoad(dir)).createdAt);
  });

  it('does not take in a line another process is still writing', async () => {
    const { dir, ours, file, warnings } = await setup();
    appendFileSync(file, '{"role":"user","content":"half');
    expect(contents(await ours.load('k'))).toEqual(['m0', 'm1']);
    appendFileSync(file, ' and the rest"}\n');
    expect(contents(await ours.load('k'))).toEqual(['m0', 'm1', 'half and the rest']);
    expect(contents(await freshLoad(dir))).toEqual(['m0', 'm1', 'half and the rest']);
    expect(warnings.join('\n')).toMatch(/torn last line/);
  });

  it('skips a damaged appended line with a warning, as a full read does', async () => {
    const { dir, ours, file, warnings } = await setup();
    appendFileSync(file, `not json\n${JSON.stringify(user('after'))}\n`);
    expect(contents(await ours.load('k'))).toEqual(['m0', 'm1', 'after']);
    expect(warnings.join('\n')).toMatch(/corrupt line/);
    expect(contents(await freshLoad(dir))).toEqual(['m0', 'm1', 'after']);
  });
});

describe('JsonlSessionStore across restarts', () => {
  it('a new store (a restarted process) loads exactly what was saved, turn after turn', async () => {
    const { dir, ours } = await setup();
    let session = await ours.load('k');
    for (let turn = 0; turn < 5; turn++) {
      session.messages.push(user(`q${turn} ünïcödé 😀`));
      session.metadata.pending_user_turn = true;
      await ours.save(session);
      session.messages.push(reply(`a${turn}`));
      delete session.metadata.pending_user_turn;
      session.metadata.token_stats = { total_tokens: turn };
      await ours.save(session);
      const restarted = await freshLoad(dir);
      expect(restarted.messages).toEqual(session.messages);
      expect(restarted.metadata).toEqual(session.metadata);
      session = turn % 2 ? restarted : await ours.load('k');
    }
  });
});

describe('JsonlSessionStore compaction', () => {
  it('leaves a long session file alone while its superseded metadata is a small share of it', async () => {
    const { dir, ours, file } = await setup();
    const session = await ours.load('k');
    session.messages.push(user('x'.repeat(200_000)));
    await ours.save(session);
    const ino = statSync(file).ino;
    for (let i = 0; i < 100; i++) {
      session.metadata.round = i;
      await ours.save(session);
    }
    expect(statSync(file).ino).toBe(ino);
    expect((await freshLoad(dir)).metadata.round).toBe(99);
  });

  it('compacts a short session file once metadata lines pile up', async () => {
    const { ours, file } = await setup();
    const session = await ours.load('k');
    const ino = statSync(file).ino;
    for (let i = 0; i < 70; i++) {
      session.metadata.round = i;
      await ours.save(session);
    }
    expect(statSync(file).ino).not.toBe(ino);
    expect(linesOf(file).filter((l) => l.includes('"_type":"metadata"')).length).toBeLessThan(70);
  });
});
