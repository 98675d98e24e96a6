import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ServerFrame } from '../../../src/channels/websocket/frames.js';
import { FlushScheduler, Outbox } from '../../../src/channels/websocket/outbox.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** An outbox recording each batch it writes; `endTurn()` plays the end of an event-loop turn (flushes). */
function outbox(deltaIntervalMs = 30) {
  const batches: ServerFrame[][] = [];
  const due: Outbox[] = [];
  const box = new Outbox({
    write: (frames) => batches.push(frames),
    requestFlush: (asking) => due.push(asking),
    deltaIntervalMs,
  });
  const endTurn = () => {
    for (const asking of due.splice(0)) asking.flush();
  };
  /** Lets `ms` pass, then ends the event-loop turn. */
  const wait = (ms: number) => {
    vi.advanceTimersByTime(ms);
    endTurn();
  };
  return { box, batches, endTurn, wait, frames: () => batches.flat() };
}

const delta = (text: string, stream_id = 's1', chat_id = 'c'): ServerFrame => ({
  event: 'delta',
  chat_id,
  text,
  stream_id,
});

/** What a client shows: deltas appended per stream, `stream_end` text replacing them. */
function assembled(frames: ServerFrame[]): Record<string, string> {
  const text: Record<string, string> = {};
  for (const frame of frames) {
    if (frame.event === 'delta') text[frame.stream_id] = (text[frame.stream_id] ?? '') + frame.text;
    if (frame.event === 'stream_end' && frame.text !== undefined) text[frame.stream_id] = frame.text;
  }
  return text;
}

describe('Outbox', () => {
  it('writes the frames queued in one event-loop turn as one batch, in order', () => {
    const { box, batches, endTurn } = outbox();
    box.push({ event: 'message', chat_id: 'c', text: 'ls', kind: 'tool_hint' });
    box.push({ event: 'message', chat_id: 'c', text: '', kind: 'progress' });
    box.push({ event: 'turn_end', chat_id: 'c' });
    expect(batches).toEqual([]);
    endTurn();
    expect(batches.map((batch) => batch.map((f) => (f.event === 'message' ? f.kind : f.event)))).toEqual([
      ['tool_hint', 'progress', 'turn_end'],
    ]);
  });

  it('merges consecutive deltas of one stream, never across streams, kinds or chats', () => {
    const { box, frames, endTurn } = outbox();
    box.push(delta('Hel'));
    box.push(delta('lo'));
    box.push({ event: 'reasoning_delta', chat_id: 'c', text: 'hmm', stream_id: 's1' });
    box.push(delta(' world'));
    box.push(delta('other', 's2'));
    box.push(delta('elsewhere', 's2', 'c2'));
    box.push({ event: 'stream_end', chat_id: 'c', stream_id: 's1', text: 'Hello world' });
    endTurn();
    expect(frames()).toEqual([
      delta('Hello'),
      { event: 'reasoning_delta', chat_id: 'c', text: 'hmm', stream_id: 's1' },
      delta(' world'),
      delta('other', 's2'),
      delta('elsewhere', 's2', 'c2'),
      { event: 'stream_end', chat_id: 'c', stream_id: 's1', text: 'Hello world' },
    ]);
  });

  it('sends the first delta at once and later ones at most once per interval', () => {
    const { box, batches, endTurn, wait } = outbox(30);
    box.push(delta('a'));
    endTurn();
    expect(batches).toEqual([[delta('a')]]);
    box.push(delta('b'));
    wait(10);
    box.push(delta('c'));
    wait(19);
    expect(batches).toHaveLength(1);
    wait(1);
    expect(batches).toEqual([[delta('a')], [delta('bc')]]);
    // Another frame does not wait: it takes the held deltas with it, in order.
    box.push(delta('d'));
    box.push({ event: 'stream_end', chat_id: 'c', stream_id: 's1' });
    endTurn();
    expect(batches.at(-1)).toEqual([delta('d'), { event: 'stream_end', chat_id: 'c', stream_id: 's1' }]);
  });

  it('assembles exactly the streamed text whatever the timing', () => {
    const { box, frames, wait } = outbox(30);
    let random = 7;
    const next = () => {
      random = (random * 48271) % 2147483647;
      return random;
    };
    let expected = '';
    for (let i = 0; i < 500; i++) {
      const piece = `w${i}${i % 7 === 0 ? '\n' : ' '}`;
      expected += piece;
      box.push(delta(piece));
      wait(next() % 12);
    }
    box.push({ event: 'stream_end', chat_id: 'c', stream_id: 's1' });
    box.push({ event: 'turn_end', chat_id: 'c' });
    wait(0);
    const sent = frames();
    expect(assembled(sent)).toEqual({ s1: expected });
    expect(sent.slice(-2).map((f) => f.event)).toEqual(['stream_end', 'turn_end']);
    // About one frame per 30 ms of streaming instead of 500.
    expect(sent.length).toBeLessThan(150);
  });

  it('discard drops what is queued and cancels the held deltas', () => {
    const { box, batches, endTurn, wait } = outbox(30);
    box.push(delta('a'));
    endTurn();
    box.push(delta('b'));
    box.discard();
    wait(100);
    expect(batches).toEqual([[delta('a')]]);
    expect(box.pending).toBe(0);
  });
});

describe('FlushScheduler', () => {
  it('flushes every outbox that asked in one pass, and a failing one does not stop the rest', async () => {
    const errors: unknown[] = [];
    const scheduler = new FlushScheduler((err) => errors.push(err));
    const written: string[] = [];
    const boxes = ['a', 'b', 'c'].map(
      (name) =>
        new Outbox({
          write: () => {
            if (name === 'b') throw new Error('socket gone');
            written.push(name);
          },
          requestFlush: scheduler.request,
        }),
    );
    for (const box of boxes) box.push({ event: 'turn_end', chat_id: 'x' });
    expect(written).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual(['a', 'c']);
    expect(errors).toHaveLength(1);
  });
});
