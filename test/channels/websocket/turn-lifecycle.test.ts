/**
 * nanobot's turn lifecycle as its WebUI and TUI drive it: a client bootstraps, opens a chat and sends messages with
 * `turn_id` and `webui: true` (and keys this gateway does not use); the frames of each turn come back in nanobot's
 * order, each naming its turn. Driven through a real gateway (agent, dispatcher) against the fake LLM.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../../src/channels/websocket/frames.js';
import { gate } from '../../helpers/eventually.js';
import { startWebUiGateway, type WebUiGateway } from './gateway-helpers.js';
import { connect, type StartedChannel, startChannel, type TestClient } from './helpers.js';

const open: { run: WebUiGateway; clients: TestClient[] }[] = [];
const channels: { started: StartedChannel; clients: TestClient[] }[] = [];
afterEach(async () => {
  for (const { run, clients } of open.splice(0)) {
    for (const client of clients) await client.close();
    await run.close();
  }
  for (const { started, clients } of channels.splice(0)) {
    for (const client of clients) await client.close();
    await started.channel.stop();
  }
});

/** Like nanobot's WebUI: bootstrap, connect with the issued token, new_chat (with a workspace scope it sends). */
async function start(script: Parameters<typeof startWebUiGateway>[0]) {
  const run = await startWebUiGateway(script);
  const entry = { run, clients: [] as TestClient[] };
  open.push(entry);
  const boot = (await (await fetch(`${run.url}/webui/bootstrap`)).json()) as { token: string; api_token: string };
  const client = await connect(run.port, { token: boot.token, clientId: 'webui', origin: run.url });
  entry.clients.push(client);
  await client.next((f) => f.event === 'ready');
  client.send({ type: 'new_chat', workspace_scope: { project_path: '/tmp', access_mode: 'restricted' } });
  const attached = await client.next((f) => f.event === 'attached');
  const chatId = attached.event === 'attached' ? attached.chat_id : '';
  expect(await client.next((f) => f.event === 'session_updated')).toEqual({
    event: 'session_updated',
    chat_id: chatId,
    scope: 'metadata',
  });
  const message = (content: string, turnId: string) =>
    client.send({
      type: 'message',
      chat_id: chatId,
      content,
      turn_id: turnId,
      webui: true,
      // Keys nanobot's clients send that this gateway does not use: ignored, never a reason to refuse.
      cli_apps: [],
      mcp_presets: [],
      quoted_context: 'earlier text',
      user_shell: false,
      workspace_scope: { project_path: '/tmp', access_mode: 'restricted' },
    });
  return { run, client, chatId, boot, message };
}

const idleOf = (chatId: string, turnId: string) => (f: ServerFrame) =>
  f.event === 'goal_status' && f.chat_id === chatId && f.status === 'idle' && 'turn_id' in f && f.turn_id === turnId;

const LIFECYCLE = new Set([
  'message_accepted',
  'goal_status',
  'turn_model_updated',
  'stream_end',
  'message',
  'turn_end',
  'session_updated',
]);

function turnOf(frame: ServerFrame): string | undefined {
  return 'turn_id' in frame ? frame.turn_id : undefined;
}

describe('the turn lifecycle of nanobot’s clients', () => {
  it('answers one turn in nanobot’s order, every frame naming the turn', async () => {
    const { run, client, chatId, boot, message } = await start([
      { toolCalls: [{ name: 'read_file', arguments: { path: 'notes.md' } }] },
      { text: 'Your notes say hello.' },
    ]);
    writeFileSync(join(run.workspace, 'notes.md'), 'hello\n');
    message('What do my notes say?', 'turn-1');
    await client.next(idleOf(chatId, 'turn-1'), 10_000);
    const frames = client.frames.filter((f) => 'chat_id' in f && f.chat_id === chatId).slice(2);

    const order = frames.map((f) => f.event).filter((event) => LIFECYCLE.has(event));
    expect(order).toEqual([
      'message_accepted',
      'goal_status',
      'turn_model_updated',
      'message', // the read_file call starting: nanobot's tool_hint row with its tool_events
      'message', // … and ending (kind progress)
      'stream_end',
      'turn_end',
      'session_updated',
      'goal_status',
    ]);
    expect(frames[0]).toEqual({
      event: 'message_accepted',
      chat_id: chatId,
      turn_id: 'turn-1',
      starts_turn: true,
      active_turn_id: 'turn-1',
    });
    const running = frames.find((f) => f.event === 'goal_status');
    expect(running).toMatchObject({ status: 'running', turn_id: 'turn-1' });
    const startedAt = running?.event === 'goal_status' ? (running.started_at ?? 0) : 0;
    expect(startedAt).toBeGreaterThan(1e9); // Unix seconds, as nanobot sends it
    expect(startedAt).toBeLessThan(1e11);
    expect(frames.find((f) => f.event === 'turn_model_updated')).toMatchObject({ model_name: 'test-model' });
    expect(frames.find((f) => f.event === 'stream_end')).toMatchObject({ text: 'Your notes say hello.' });
    // Every frame of the turn names it; the row update (to every connection) is about the chat, not the turn.
    for (const frame of frames) {
      if (frame.event === 'session_updated') {
        expect(frame).toEqual({ event: 'session_updated', chat_id: chatId, scope: 'thread' });
      } else if (frame.event !== 'turn_model_updated') {
        // (nanobot sends the model update without the turn, too)
        expect(turnOf(frame), JSON.stringify(frame)).toBe('turn-1');
      }
    }
    // The bootstrap's api_token reads the chat list.
    const list = await fetch(`${run.url}/api/sessions`, { headers: { authorization: `Bearer ${boot.api_token}` } });
    expect(list.status).toBe(200);
  });

  it('accepts a follow-up beside the running turn (starts_turn: false); /stop ends that turn, the follow-up runs next', async () => {
    const reached = gate();
    const slow = async () => {
      reached.open();
      await new Promise((resolve) => setTimeout(resolve, 30_000).unref());
      return { text: 'too slow' };
    };
    const { client, chatId, message } = await start([slow, { text: 'Back again.' }]);
    message('think for a long time', 'turn-1');
    const running = await client.next((f) => f.event === 'goal_status' && f.status === 'running', 10_000);
    const startedAt = running.event === 'goal_status' ? running.started_at : undefined;
    expect(startedAt).toBeGreaterThan(1e9);
    await reached.promise;
    message('and then this', 'turn-2');
    expect(await client.next((f) => f.event === 'message_accepted' && f.turn_id === 'turn-2')).toEqual({
      event: 'message_accepted',
      chat_id: chatId,
      turn_id: 'turn-2',
      starts_turn: false,
      active_turn_id: 'turn-1',
      started_at: startedAt, // the running turn's start, as its goal_status said
    });
    message('/stop', 'system:stop-1');
    expect(await client.next((f) => f.event === 'message_accepted' && f.turn_id === 'system:stop-1')).toEqual({
      event: 'message_accepted',
      chat_id: chatId,
      turn_id: 'system:stop-1',
      starts_turn: false,
      active_turn_id: 'turn-1',
      started_at: startedAt,
    });
    // The stop command's answer names the command's turn, so the client settles it.
    const stopped = await client.next((f) => f.event === 'message' && turnOf(f) === 'system:stop-1', 10_000);
    expect(stopped.event === 'message' && stopped.text).toMatch(/stop/i);
    await client.next(idleOf(chatId, 'turn-2'), 10_000);

    const seen = client.frames.map((f) => `${f.event}:${turnOf(f) ?? ''}`);
    const at = (label: string) => seen.indexOf(label);
    expect(at('turn_end:turn-1')).toBeGreaterThan(-1);
    expect(seen.filter((label) => label === 'turn_end:turn-1')).toHaveLength(1);
    expect(at('goal_status:turn-1')).toBeLessThan(at('turn_end:turn-1'));
    // turn-2 came too late to be folded in (turn-1 was waiting on the model): it runs once turn-1 ended.
    expect(at('turn_end:turn-1')).toBeLessThan(seen.indexOf('goal_status:turn-2'));
    expect(seen.indexOf('goal_status:turn-2')).toBeLessThan(at('turn_end:turn-2'));
    expect(seen.filter((label) => label === 'goal_status:turn-2')).toHaveLength(2);
    expect(client.frames.find((f) => f.event === 'stream_end' && turnOf(f) === 'turn-2')).toMatchObject({
      text: 'Back again.',
    });
    // The command is answered beside the turn: it does not end one.
    expect(seen).not.toContain('turn_end:system:stop-1');
  });
});

describe('client envelopes of nanobot’s clients', () => {
  async function tabs() {
    const started = await startChannel();
    const entry = { started, clients: [] as TestClient[] };
    channels.push(entry);
    const tab = async () => {
      const c = await connect(started.port, { token: started.token, clientId: 'webui' });
      entry.clients.push(c);
      await c.next((f) => f.event === 'ready');
      return c;
    };
    return { started, tab };
  }

  it('names chat_id and turn_id on every refusal of a message', async () => {
    const { started, tab } = await tabs();
    const c = await tab();
    const refused: [Record<string, unknown>, RegExp][] = [
      [{ content: '   ' }, /empty message/],
      [{ content: 5 }, /content/],
      [{ content: 'x'.repeat(100_001) }, /longer than/],
      [{ content: 'hi', media: ['/etc/passwd'] }, /media/],
      [{ content: 'hi', media: ['A'.repeat(24)] }, /unknown or expired upload/],
      [{ content: 'hi', media: [{ data_url: 'data:text/html;base64,PGI+', name: 'a.html' }] }, /attachment_rejected/],
      [{ content: 'hi', media: 'not a list' }, /media/],
    ];
    for (const [i, [extra, detail]] of refused.entries()) {
      const turn_id = `turn-${i}`;
      c.send({ type: 'message', chat_id: 'chat-1', turn_id, webui: true, ...extra });
      const error = await c.next((f) => f.event === 'error');
      expect(error, JSON.stringify(extra)).toMatchObject({ event: 'error', chat_id: 'chat-1', turn_id });
      expect(error.event === 'error' && error.detail).toMatch(detail);
    }
    // A malformed chat id is not echoed; the turn still is, so the client can fail that send.
    c.send({ type: 'message', chat_id: '../etc', content: 'hi', turn_id: 'turn-x' });
    const bad = await c.next((f) => f.event === 'error');
    expect(bad).toMatchObject({ turn_id: 'turn-x' });
    expect('chat_id' in bad).toBe(false);
    // nanobot's frame types this gateway does not serve: said so, naming the chat.
    for (const type of ['set_workspace_scope', 'new_temporary_chat', 'discard_temporary_chat']) {
      c.send({ type, chat_id: 'chat-1' });
      const error = await c.next((f) => f.event === 'error');
      expect(error).toMatchObject({ chat_id: 'chat-1', detail: expect.stringMatching(/not supported|not stored/) });
    }
    // Voice input gets nanobot's own answer: transcription_error `not_configured` for that request (issue 22).
    c.send({
      type: 'transcribe_audio',
      request_id: 'voice-1',
      data_url: 'data:audio/webm;base64,AAAA',
      duration_ms: 900,
    });
    expect(await c.next((f) => f.event === 'transcription_error')).toEqual({
      event: 'transcription_error',
      request_id: 'voice-1',
      detail: 'not_configured',
    });
    for (const request_id of [undefined, '', 7, 'x'.repeat(81)]) {
      c.send({ type: 'transcribe_audio', request_id });
      expect(await c.next((f) => f.event === 'transcription_error')).toEqual({
        event: 'transcription_error',
        detail: 'invalid_request',
      });
    }
    // Nothing of that reached the agent; a good message with unknown keys does.
    c.send({ type: 'message', chat_id: 'chat-1', content: 'fine', turn_id: 'ok-1', webui: true, future_key: { a: 1 } });
    const inbound = await started.bus.consumeInbound();
    expect(inbound).toMatchObject({ chatId: 'chat-1', content: 'fine' });
    expect(inbound.metadata).toMatchObject({ webui: true, webui_turn_id: 'ok-1' });
    // A malformed turn id is dropped (the message still goes), as nanobot replaces it.
    c.send({ type: 'message', chat_id: 'chat-1', content: 'again', turn_id: 'bad turn id!' });
    expect((await started.bus.consumeInbound()).metadata?.webui_turn_id).toBeUndefined();
  });

  it('shows another tab what was sent, with the turn it starts', async () => {
    const { tab } = await tabs();
    const one = await tab();
    const two = await tab();
    two.send({ type: 'attach', chat_id: 'shared' });
    await two.next((f) => f.event === 'attached');
    one.send({ type: 'message', chat_id: 'shared', content: 'hello', turn_id: 't1', webui: true });
    expect(await one.next((f) => f.event === 'message_accepted')).toEqual({
      event: 'message_accepted',
      chat_id: 'shared',
      turn_id: 't1',
      starts_turn: true,
      active_turn_id: 't1',
    });
    expect(await two.next((f) => f.event === 'user_message')).toEqual({
      event: 'user_message',
      chat_id: 'shared',
      text: 'hello',
      starts_turn: true,
      turn_id: 't1',
      active_turn_id: 't1',
    });
    // The sender gets no echo of its own message.
    expect(one.frames.some((f) => f.event === 'user_message')).toBe(false);
  });
});
