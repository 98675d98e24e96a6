import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../../src/channels/websocket/frames.js';
import { api, connect, type StartedChannel, startChannel, type TestClient } from './helpers.js';

const running: { started: StartedChannel; clients: TestClient[] }[] = [];
afterEach(async () => {
  for (const { started, clients } of running.splice(0)) {
    for (const client of clients) await client.close();
    await started.channel.stop();
  }
});

async function open(block: Record<string, unknown> = {}) {
  const started = await startChannel(block);
  const entry = { started, clients: [] as TestClient[] };
  running.push(entry);
  const client = async (clientId = 'tester') => {
    const c = await connect(started.port, { token: started.token, clientId });
    entry.clients.push(c);
    const ready = (await c.next()) as Extract<ServerFrame, { event: 'ready' }>;
    return { c, defaultChat: ready.chat_id };
  };
  return { ...started, client };
}

const isEvent =
  <E extends ServerFrame['event']>(event: E) =>
  (frame: ServerFrame): frame is Extract<ServerFrame, { event: E }> =>
    frame.event === event;

describe('WebSocket channel: client frames', () => {
  it('routes plain text and {"content"} to the default chat, asking for streaming and detail', async () => {
    const { client, bus } = await open();
    const { c, defaultChat } = await client('alice');
    c.send('hello there');
    const first = await bus.consumeInbound();
    expect(first).toMatchObject({
      channel: 'websocket',
      senderId: 'alice',
      chatId: defaultChat,
      content: 'hello there',
    });
    expect(first.metadata).toMatchObject({ _wants_stream: true, _wants_events: true, client_id: 'alice' });
    c.send({ content: 'second' });
    expect((await bus.consumeInbound()).content).toBe('second');
    c.send(JSON.stringify('a JSON string'));
    expect((await bus.consumeInbound()).content).toBe('a JSON string');
  });

  it('answers bad frames with error and keeps the connection open', async () => {
    const { client, bus } = await open();
    const { c } = await client();
    const cases: [unknown, RegExp][] = [
      [{ foo: 1 }, /no text/],
      [[1, 2], /expected text/],
      [{ type: 'explode' }, /unknown type/],
      [{ type: 'attach', chat_id: '../../etc/passwd' }, /invalid chat_id/],
      [{ type: 'attach' }, /chat_id/],
      [{ type: 'message', chat_id: 'ok-chat', content: 5 }, /content/],
      [{ type: 'message', chat_id: 'ok-chat', content: 'x'.repeat(100_001) }, /longer than/],
      [{ type: 'message', chat_id: 'ok-chat', content: 'hi', media: ['/etc/passwd'] }, /media/],
      [{ type: 'message', chat_id: 'ok-chat', content: '   ' }, /empty message/],
      [{ type: 'message', chat_id: 'ok-chat', content: 'hi', media: ['A'.repeat(24)] }, /unknown or expired upload/],
      ['   ', /empty/],
    ];
    for (const [frame, detail] of cases) {
      c.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
      const error = await c.next(isEvent('error'));
      expect(error.event === 'error' && error.detail).toMatch(detail);
    }
    c.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    expect((await c.next(isEvent('error'))).event).toBe('error');
    // Still open and working.
    c.send({ type: 'message', chat_id: 'ok-chat', content: 'fine' });
    expect((await bus.consumeInbound()).content).toBe('fine');
  });

  it('answers a frame over maxMessageBytes with an error frame naming the limit, and stays open', async () => {
    const { client, bus } = await open({ maxMessageBytes: 2048 });
    const { c } = await client();
    for (const frame of [
      'x'.repeat(2049),
      'é'.repeat(1100), // 2,200 bytes in 1,100 characters: the limit is bytes
      JSON.stringify({ content: 'y'.repeat(4000) }),
      JSON.stringify({ type: 'message', chat_id: 'ok-chat', content: 'z'.repeat(8000) }),
    ]) {
      c.send(frame);
      const error = await c.next(isEvent('error'));
      expect(error.event === 'error' && error.detail).toMatch(
        /^frame of \d+ bytes is over channels\.websocket\.maxMessageBytes \(2048\); send files with POST \/api\/uploads$/,
      );
    }
    c.send({ type: 'message', chat_id: 'ok-chat', content: 'fine' });
    expect((await bus.consumeInbound()).content).toBe('fine');
  });

  it('names the text limit and the way around it', async () => {
    const { client } = await open();
    const { c } = await client();
    c.send('x'.repeat(100_001));
    const error = await c.next(isEvent('error'));
    expect(error.event === 'error' && error.detail).toBe(
      'content is longer than 100000 characters; split it, or upload it as a file with POST /api/uploads',
    );
  });

  it('closes only a frame past 4x maxMessageBytes (1009): its bytes are not read into memory', async () => {
    const { client } = await open({ maxMessageBytes: 2048 });
    const { c } = await client();
    const closed = new Promise<number>((resolve) => c.ws.once('close', (code) => resolve(code)));
    c.send('x'.repeat(4 * 2048 + 1));
    expect(await closed).toBe(1009);
  });

  it('new_chat mints a chat, attach follows one, and replies fan out to every attached connection', async () => {
    const { client, bus, channel } = await open();
    const tab1 = await client();
    const tab2 = await client();
    tab1.c.send({ type: 'new_chat' });
    const attached = await tab1.c.next(isEvent('attached'));
    const chatId = attached.event === 'attached' ? attached.chat_id : '';
    expect(chatId).toMatch(/^[0-9a-f-]{36}$/);
    expect(chatId).not.toBe(tab1.defaultChat);

    tab2.c.send({ type: 'attach', chat_id: chatId });
    expect(await tab2.c.next(isEvent('attached'))).toEqual({ event: 'attached', chat_id: chatId });

    tab1.c.send({ type: 'message', chat_id: chatId, content: 'from tab 1' });
    expect(await bus.consumeInbound()).toMatchObject({ chatId, content: 'from tab 1' });
    expect(await tab2.c.next(isEvent('user_message'))).toEqual({
      event: 'user_message',
      chat_id: chatId,
      text: 'from tab 1',
      starts_turn: true,
    });

    await channel.send({ channel: 'websocket', chatId, content: 'the answer', metadata: { _turn_end: true } });
    for (const tab of [tab1, tab2]) {
      expect(await tab.c.next(isEvent('message'))).toEqual({ event: 'message', chat_id: chatId, text: 'the answer' });
      expect(await tab.c.next(isEvent('turn_end'))).toEqual({ event: 'turn_end', chat_id: chatId });
    }
    // The default chat of tab 2 did not get it.
    expect(tab2.c.frames.filter((f) => f.event === 'message' && f.chat_id === tab2.defaultChat)).toEqual([]);

    tab2.c.send({ type: 'detach', chat_id: chatId });
    tab2.c.send({ type: 'attach', chat_id: 'probe' });
    await tab2.c.next(isEvent('attached'));
    await channel.send({ channel: 'websocket', chatId, content: 'only tab 1' });
    await tab1.c.next((f) => f.event === 'message' && f.text === 'only tab 1');
    expect(tab2.c.frames.some((f) => f.event === 'message' && f.text === 'only tab 1')).toBe(false);
  });

  it('turns the agent’s stream, reasoning and tool events into frames, in order', async () => {
    const { client, channel } = await open();
    const { c, defaultChat: chatId } = await client();
    const meta = { _wants_events: true, _wants_stream: true };
    const out = (content: string, extra: Record<string, unknown>) =>
      channel.send({ channel: 'websocket', chatId, content, metadata: { ...meta, ...extra } });
    await out('Let me', { _reasoning_delta: true, _stream_id: 'r1' });
    await out('', { _reasoning_end: true, _stream_id: 'r1' });
    await out('Hel', { _stream_delta: true, _stream_id: 's1' });
    await out('lo', { _stream_delta: true, _stream_id: 's1' });
    await out('', { _stream_end: true, _stream_id: 's1' });
    const tool = (phase: 'start' | 'end', extra = {}) => ({
      version: 1,
      phase,
      call_id: 'c1',
      name: 'read_file',
      arguments: { path: 'a' },
      result: null,
      error: null,
      files: [],
      embeds: [],
      ...extra,
    });
    await out('read a', { _tool_events: [tool('start')] });
    // The one-line hint and the whole-reasoning note are for chat apps; a detailed client has the above.
    await out('read_file("a")', { _progress: true, _tool_hint: true });
    await out('Let me', { _progress: true, _reasoning: true });
    // Malformed tool events (not nanobot's shape) are dropped, never sent half-made.
    await out('', { _tool_events: [{ phase: 'end', id: 'c1' }] });
    await out('', { _tool_events: [] });
    await out('', { _tool_events: [tool('end', { result: 'text' })] });
    await out('Done.', { _stream_delta: true, _stream_id: 's2' });
    await out('Done!', { _stream_id: 's2', _turn_end: true });
    const expected = [
      { event: 'reasoning_delta', chat_id: chatId, text: 'Let me', stream_id: 'r1' },
      { event: 'reasoning_end', chat_id: chatId, stream_id: 'r1' },
      // Deltas of one stream queued together leave as one frame.
      { event: 'delta', chat_id: chatId, text: 'Hello', stream_id: 's1' },
      { event: 'stream_end', chat_id: chatId, stream_id: 's1' },
      { event: 'message', chat_id: chatId, text: 'read a', kind: 'tool_hint', tool_events: [tool('start')] },
      { event: 'message', chat_id: chatId, text: '', kind: 'progress', tool_events: [tool('end', { result: 'text' })] },
      { event: 'delta', chat_id: chatId, text: 'Done.', stream_id: 's2' },
      { event: 'stream_end', chat_id: chatId, stream_id: 's2', text: 'Done!' },
      { event: 'turn_end', chat_id: chatId },
      { event: 'session_updated', chat_id: chatId, scope: 'thread' },
      { event: 'goal_status', chat_id: chatId, status: 'idle' },
    ];
    await c.next(isEvent('goal_status'));
    expect(c.frames.slice(1)).toEqual(expected);
  });

  it('gives a plain client tool hints and reasoning as frames too', async () => {
    const { client, channel } = await open();
    const { c, defaultChat: chatId } = await client();
    await channel.send({
      channel: 'websocket',
      chatId,
      content: 'exec("ls")',
      metadata: { _progress: true, _tool_hint: true },
    });
    await channel.send({
      channel: 'websocket',
      chatId,
      content: 'hmm',
      metadata: { _progress: true, _reasoning: true },
    });
    expect(await c.next(isEvent('message'))).toEqual({
      event: 'message',
      chat_id: chatId,
      text: 'exec("ls")',
      kind: 'tool_hint',
    });
    const delta = await c.next(isEvent('reasoning_delta'));
    expect(delta).toMatchObject({ text: 'hmm' });
    expect(await c.next(isEvent('reasoning_end'))).toMatchObject({
      stream_id: delta.event === 'reasoning_delta' && delta.stream_id,
    });
  });

  it('takes uploads (0600 under media/websocket) and hands them to the agent as media', async () => {
    const started = await open({ maxMediaMb: 1 });
    const { c, defaultChat } = await started.client();
    const bytes = Buffer.from('%PDF-1.4 fake');
    const res = await api(started, '/api/uploads', {
      method: 'POST',
      headers: { 'content-type': 'application/pdf', 'x-file-name': encodeURIComponent('../../report final.pdf') },
      body: bytes,
    });
    expect(res.status).toBe(201);
    const upload = (await res.json()) as { id: string; name: string; kind: string; size: number };
    expect(upload).toMatchObject({ kind: 'file', size: bytes.length });

    c.send({ type: 'message', chat_id: defaultChat, content: 'read this', media: [upload.id] });
    const inbound = await started.bus.consumeInbound();
    const path = inbound.media?.[0] ?? '';
    expect(path.startsWith(join(started.dataDir, 'media', 'websocket'))).toBe(true);
    expect(path).toMatch(/report_final\.pdf$/);
    expect(readFileSync(path)).toEqual(bytes);
    expect(statSync(path).mode & 0o777).toBe(0o600);

    const tooBig = await api(started, '/api/uploads', {
      method: 'POST',
      headers: { 'content-type': 'image/png' },
      body: Buffer.alloc(2 * 1024 * 1024),
    });
    expect(tooBig.status).toBe(413);
  }, 15_000);
});
