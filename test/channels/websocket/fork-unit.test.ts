/**
 * `forkChat` on its own: a failed save leaves neither the fork's transcript nor its session behind (nothing
 * half-made), the fork's transcript comes from the session when the source has none, and the title follows nanobot's
 * `clean_generated_title`.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanTitle, forkChat } from '../../../src/channels/websocket/fork.js';
import { WebuiTranscripts } from '../../../src/channels/websocket/transcript.js';
import { JsonlSessionStore } from '../../../src/session/jsonl-store.js';
import type { Session } from '../../../src/session/types.js';
import { silentLogger } from '../../../src/util/log.js';

async function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'nb-fork-'));
  const store = new JsonlSessionStore(join(dir, 'sessions'));
  const transcripts = new WebuiTranscripts(join(dir, 'webui'), 'websocket', silentLogger, () => 1000);
  const source = await store.load('websocket:src');
  source.messages.push(
    { role: 'user', content: 'one' },
    { role: 'assistant', content: 'reply one' },
    { role: 'user', content: 'two' },
    { role: 'assistant', content: 'reply two' },
  );
  source.metadata = { title: 'Source', goal_state: { status: 'active' }, keep: 1 };
  await store.save(source);
  return { dir, store, transcripts };
}

describe('forkChat', () => {
  it('removes the transcript again when the session cannot be saved', async () => {
    const { store, transcripts } = await setup();
    const failing = Object.assign(Object.create(store) as JsonlSessionStore, {
      save: async (session: Session) => {
        if (session.key === 'websocket:fork-1') throw new Error('disk full');
        return store.save(session);
      },
    });
    const outcome = await forkChat(
      { store: failing, transcripts, channel: 'websocket', newId: () => 'fork-1' },
      { source_chat_id: 'src', before_user_index: 1 },
    );
    expect(outcome).toEqual({ ok: false, detail: 'fork_chat_failed' });
    expect(existsSync(transcripts.pathFor('fork-1'))).toBe(false);
    expect((await store.load('websocket:fork-1')).messages).toEqual([]);
    expect((await store.list()).map((s) => s.key)).toEqual(['websocket:src']);
  });

  it('writes the transcript from the session when the source has none, ending in the fork marker', async () => {
    const { store, transcripts } = await setup();
    const outcome = await forkChat(
      { store, transcripts, channel: 'websocket', newId: () => 'fork-2' },
      { source_chat_id: 'src', before_user_index: 1, title: '  Title: “Plan B”  ' },
    );
    expect(outcome).toEqual({ ok: true, chatId: 'fork-2', sessionKey: 'websocket:fork-2' });
    const rows = readFileSync(transcripts.pathFor('fork-2'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => [r.event, r.chat_id, r.text])).toEqual([
      ['user', 'fork-2', 'one'],
      ['message', 'fork-2', 'reply one'],
      ['turn_end', 'fork-2', undefined],
      ['fork_marker', 'fork-2', undefined],
    ]);
    const fork = await store.load('websocket:fork-2');
    expect(fork.messages.map((m) => m.content)).toEqual(['one', 'reply one']);
    // The source's live state and name stay with the source; other metadata is copied.
    expect(fork.metadata).toEqual({ title: 'Plan B', keep: 1 });
    expect((await store.load('websocket:src')).metadata.title).toBe('Source');
  });

  it('cleans titles as nanobot does', () => {
    expect(cleanTitle('  Title: "Trip plan."  ')).toBe('Trip plan');
    expect(cleanTitle('标题：旅行。')).toBe('旅行');
    expect(cleanTitle('<think>x</think>Done!')).toBe('Done');
    // nanobot's order: the prefix goes first, so a think block before it leaves it in.
    expect(cleanTitle('<think>x</think> Title: Done')).toBe('Title: Done');
    expect(cleanTitle('a'.repeat(80))).toBe(`${'a'.repeat(59)}…`);
    expect(cleanTitle(42)).toBe('');
    expect(cleanTitle('   ')).toBe('');
  });
});
