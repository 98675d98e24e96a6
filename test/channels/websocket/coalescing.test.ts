import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../../src/channels/websocket/frames.js';
import { connect, type StartedChannel, startChannel, type TestClient } from './helpers.js';

const running: { started: StartedChannel; clients: TestClient[] }[] = [];
afterEach(async () => {
  for (const { started, clients } of running.splice(0)) {
    for (const client of clients) await client.close();
    await started.channel.stop();
  }
});

async function open() {
  const started = await startChannel();
  const c = await connect(started.port, { token: started.token, clientId: 'reader' });
  running.push({ started, clients: [c] });
  const ready = await c.next((f) => f.event === 'ready');
  const chatId = ready.event === 'ready' ? ready.chat_id : '';
  const say = (content: string, metadata: Record<string, unknown>) =>
    started.channel.send({ channel: 'websocket', chatId, content, metadata: { _wants_stream: true, ...metadata } });
  return { started, c, chatId, say };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('WebSocket channel: streamed deltas', () => {
  it('sends a fast stream as fewer delta frames that add up to exactly the answer, in order', async () => {
    const { c, chatId, say } = await open();
    const pieces = Array.from({ length: 120 }, (_, i) => `tok${i}${i % 10 === 9 ? '\n' : ' '}`);
    for (const [i, piece] of pieces.entries()) {
      await say(piece, { _stream_delta: true, _stream_id: 'seg-1' });
      if (i % 3 === 2) await nextTurn();
    }
    await say(pieces.join(''), { _stream_id: 'seg-1', _turn_end: true });
    await c.next((f) => f.event === 'goal_status', 10_000);

    const frames = c.frames.filter((f): f is Exclude<ServerFrame, { event: 'ready' }> => f.event !== 'ready');
    const deltas = frames.filter((f) => f.event === 'delta');
    expect(deltas.map((f) => (f.event === 'delta' ? f.text : '')).join('')).toBe(pieces.join(''));
    expect(deltas.length).toBeLessThan(pieces.length);
    expect(deltas.every((f) => f.chat_id === chatId && f.event === 'delta' && f.stream_id === 'seg-1')).toBe(true);
    expect(frames.slice(-4)).toEqual([
      { event: 'stream_end', chat_id: chatId, stream_id: 'seg-1', text: pieces.join('') },
      { event: 'turn_end', chat_id: chatId },
      { event: 'session_updated', chat_id: chatId, scope: 'thread' },
      { event: 'goal_status', chat_id: chatId, status: 'idle' },
    ]);
  });

  it('keeps a segment’s deltas ahead of the tool call that follows it', async () => {
    const { c, chatId, say } = await open();
    await say('Let me look', { _stream_delta: true, _stream_id: 'a' });
    await nextTurn();
    await say(' it up.', { _stream_delta: true, _stream_id: 'a' });
    await say('', { _stream_end: true, _stream_id: 'a' });
    await say('read_file("x")', { _progress: true, _tool_hint: true });
    await say('Found', { _stream_delta: true, _stream_id: 'b' });
    await say('Found it.', { _stream_id: 'b', _turn_end: true });
    await c.next((f) => f.event === 'goal_status');
    const shown = c.frames.slice(1).map((f) => (f.event === 'delta' ? `delta:${f.text}` : f.event));
    expect(shown).toEqual([
      'delta:Let me look',
      'delta: it up.',
      'stream_end',
      'message',
      'delta:Found',
      'stream_end',
      'turn_end',
      'session_updated',
      'goal_status',
    ]);
    expect(c.frames.at(-4)).toEqual({ event: 'stream_end', chat_id: chatId, stream_id: 'b', text: 'Found it.' });
  });

  it('delivers what was queued before a shutdown, then closes', async () => {
    const { started, c, chatId } = await open();
    const closed = new Promise<number>((resolve) => c.ws.once('close', (code) => resolve(code)));
    await started.channel.send({
      channel: 'websocket',
      chatId,
      content: 'Shutting down now.',
      metadata: { _turn_end: true },
    });
    await started.channel.stop();
    expect(await closed).toBe(1001);
    expect(c.frames.slice(1)).toEqual([
      { event: 'message', chat_id: chatId, text: 'Shutting down now.' },
      { event: 'turn_end', chat_id: chatId },
      { event: 'session_updated', chat_id: chatId, scope: 'thread' },
      { event: 'goal_status', chat_id: chatId, status: 'idle' },
    ]);
  });
});
