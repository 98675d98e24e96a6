/**
 * What nanobot's terminal UI (tui/src/protocol.ts, app.ts in HKUDS/nanobot) needs of the gateway beyond one turn,
 * found by driving the real TUI against this gateway. The facts it relies on, written down here:
 *
 * - A second terminal opens a chat while another runs a turn on it (`nanobot agent --session websocket:<id>`): it
 *   sends `attach`, and the gateway answers `attached` and then that turn's `goal_status {status: "running",
 *   started_at, turn_id}` (nanobot replays it on subscribe). The TUI marks the turn running from `started_at` (Unix
 *   seconds) and ignores a later `turn_end`/`goal_status` of any other turn id. A chat with no running turn gets
 *   `attached` only.
 * - `message_accepted` for a message sent beside the running turn carries `started_at` (the running turn's) besides
 *   `starts_turn: false` and `active_turn_id`.
 * - Ctrl+C in the TUI sends `{type: "message", content: "/stop", turn_id, webui: true}`. nanobot does not keep that
 *   `/stop` in the chat's transcript: reopening the chat (`GET /api/sessions/websocket%3A<id>/webui-thread
 *   ?limit=120&direction=latest`) shows the stopped turn, not a "/stop" user row.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../../src/channels/websocket/frames.js';
import { gate } from '../../helpers/eventually.js';
import { startWebUiGateway, type WebUiGateway } from './gateway-helpers.js';
import { connect, type TestClient } from './helpers.js';

const open: { run: WebUiGateway; clients: TestClient[] }[] = [];
afterEach(async () => {
  for (const { run, clients } of open.splice(0)) {
    for (const client of clients) await client.close();
    await run.close();
  }
});

/** A gateway whose first model call waits (until the test's end) after opening `reached`. */
async function withSlowTurn() {
  const reached = gate();
  const slow = async () => {
    reached.open();
    await new Promise((resolve) => setTimeout(resolve, 30_000).unref());
    return { text: 'too slow' };
  };
  const run = await startWebUiGateway([slow, { text: 'Next answer.' }]);
  const entry = { run, clients: [] as TestClient[] };
  open.push(entry);
  /** A terminal: bootstrap with the WebUI token as secret (as the TUI does), connect with the issued token. */
  const terminal = async (clientId: string) => {
    const boot = (await (
      await fetch(`${run.url}/webui/bootstrap`, { headers: { 'X-Nanobot-Auth': run.token } })
    ).json()) as { token: string; api_token: string };
    const client = await connect(run.port, { token: boot.token, clientId });
    entry.clients.push(client);
    await client.next((f) => f.event === 'ready');
    return { client, apiToken: boot.api_token };
  };
  return { run, reached, terminal };
}

const send = (client: TestClient, chatId: string, content: string, turnId: string) =>
  client.send({ type: 'message', chat_id: chatId, content, turn_id: turnId, webui: true });

const runningOf = (chatId: string) => (f: ServerFrame) =>
  f.event === 'goal_status' && f.chat_id === chatId && f.status === 'running';

describe('a second terminal on a chat whose turn runs', () => {
  it('gets attached, then the running turn’s goal_status with its id and start', async () => {
    const { reached, terminal } = await withSlowTurn();
    const { client: one } = await terminal('tui-1');
    one.send({ type: 'attach', chat_id: 'shared-chat' });
    await one.next((f) => f.event === 'attached');
    send(one, 'shared-chat', 'think for a long time', 'turn-1');
    const first = await one.next(runningOf('shared-chat'), 10_000);
    await reached.promise;

    const { client: two } = await terminal('tui-2');
    two.send({ type: 'attach', chat_id: 'shared-chat' });
    await two.next((f) => f.event === 'attached');
    const replay = await two.next((f) => f.event !== 'attached');
    expect(replay).toEqual({
      event: 'goal_status',
      chat_id: 'shared-chat',
      status: 'running',
      turn_id: 'turn-1',
      started_at: first.event === 'goal_status' ? first.started_at : -1,
    });

    // A message beside the running turn: accepted into it, with the turn's start.
    send(two, 'shared-chat', 'and this', 'turn-2');
    expect(await two.next((f) => f.event === 'message_accepted')).toEqual({
      event: 'message_accepted',
      chat_id: 'shared-chat',
      turn_id: 'turn-2',
      starts_turn: false,
      active_turn_id: 'turn-1',
      started_at: first.event === 'goal_status' ? first.started_at : -1,
    });
  });

  it('gets attached only when no turn runs, before a turn and after it ended', async () => {
    const { terminal } = await withSlowTurn();
    const { client: one } = await terminal('tui-1');
    one.send({ type: 'attach', chat_id: 'idle-chat' });
    await one.next((f) => f.event === 'attached');
    // A second attach is the marker: nothing came between the first `attached` and it.
    const { client: two } = await terminal('tui-2');
    two.send({ type: 'attach', chat_id: 'idle-chat' });
    await two.next((f) => f.event === 'attached');
    two.send({ type: 'attach', chat_id: 'other-chat' });
    await two.next((f) => f.event === 'attached' && f.chat_id === 'other-chat');
    const afterFirst = two.frames.slice(two.frames.findIndex((f) => f.event === 'attached'));
    expect(afterFirst.map((f) => f.event)).toEqual(['attached', 'attached']);
  });

  it('stops seeing the turn as running once it was stopped', async () => {
    const { reached, terminal } = await withSlowTurn();
    const { client: one } = await terminal('tui-1');
    send(one, 'stop-chat', 'think for a long time', 'turn-1');
    await one.next(runningOf('stop-chat'), 10_000);
    await reached.promise;
    send(one, 'stop-chat', '/stop', 'stop-1');
    await one.next((f) => f.event === 'turn_end' && 'turn_id' in f && f.turn_id === 'turn-1', 10_000);

    const { client: two } = await terminal('tui-2');
    two.send({ type: 'attach', chat_id: 'stop-chat' });
    await two.next((f) => f.event === 'attached');
    two.send({ type: 'attach', chat_id: 'marker-chat' });
    await two.next((f) => f.event === 'attached' && f.chat_id === 'marker-chat');
    expect(two.frames.some((f) => f.event === 'goal_status')).toBe(false);
  });
});

describe('a stopped turn, reopened', () => {
  it('shows the stopped turn without a "/stop" user row (any spelling of the bare command)', async () => {
    const { run, reached, terminal } = await withSlowTurn();
    const { client, apiToken } = await terminal('tui-1');
    send(client, 'stopped-chat', 'think for a long time', 'turn-1');
    await reached.promise;
    for (const [i, spelling] of ['/stop', '/STOP', '  /stop  ', '/stop@nanobot_bot'].entries()) {
      send(client, 'stopped-chat', spelling, `stop-${i}`);
      await client.next((f) => f.event === 'message_accepted' && f.turn_id === `stop-${i}`);
    }
    await client.next((f) => f.event === 'turn_end' && 'turn_id' in f && f.turn_id === 'turn-1', 10_000);
    // A message that merely mentions stopping is conversation: it is kept.
    send(client, 'stopped-chat', 'please /stop doing that', 'turn-2');
    await client.next((f) => f.event === 'goal_status' && f.status === 'idle' && f.turn_id === 'turn-2', 10_000);

    const key = encodeURIComponent('websocket:stopped-chat');
    const res = await fetch(`${run.url}/api/sessions/${key}/webui-thread?limit=120&direction=latest`, {
      headers: { authorization: `Bearer ${apiToken}` },
    });
    expect(res.status).toBe(200);
    const thread = (await res.json()) as { messages: { role: string; content: string }[] };
    const users = thread.messages.filter((m) => m.role === 'user').map((m) => m.content);
    expect(users).toEqual(['think for a long time', 'please /stop doing that']);
  });
});

describe('a follow-up sent while a turn ran, reopened', () => {
  // The TUI's Enter while nanobot works sends the message beside the running turn; here it came too late to be
  // folded in, so it ran on its own after the turn was stopped. Its row was written when it was sent (mid-turn).
  it('shows each user message once, the follow-up before its own answer', async () => {
    const { run, reached, terminal } = await withSlowTurn();
    const { client, apiToken } = await terminal('tui-1');
    send(client, 'follow-chat', 'think for a long time', 'turn-1');
    await reached.promise;
    send(client, 'follow-chat', 'and this, afterwards', 'turn-2');
    await client.next((f) => f.event === 'message_accepted' && f.turn_id === 'turn-2');
    send(client, 'follow-chat', '/stop', 'stop-1');
    await client.next((f) => f.event === 'goal_status' && f.status === 'idle' && f.turn_id === 'turn-2', 10_000);

    const key = encodeURIComponent('websocket:follow-chat');
    const res = await fetch(`${run.url}/api/sessions/${key}/webui-thread?limit=120&direction=latest`, {
      headers: { authorization: `Bearer ${apiToken}` },
    });
    const thread = (await res.json()) as { messages: { role: string; content: string }[] };
    const rows = thread.messages.filter((m) => m.role === 'user' || (m.role === 'assistant' && m.content.trim()));
    const users = rows.filter((m) => m.role === 'user').map((m) => m.content);
    expect(users).toEqual(['think for a long time', 'and this, afterwards']);
    const at = (content: string) => rows.findIndex((m) => m.content === content);
    expect(at('and this, afterwards')).toBe(at('Next answer.') - 1);
  });
});
