/**
 * What a client that (re)opens a chat learns about the turn running in it and the chat's goal, in nanobot's frames:
 * the session row's `run_started_at`, the thread's `active_turn_id`, `goal_status running` replayed on `attach`
 * (same `started_at` and `turn_id`), `goal_state` on `turn_end` and, while a goal is active, on `attach`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame, SessionListRow } from '../../../src/channels/websocket/frames.js';
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

describe('run and goal state for clients that open a chat', () => {
  it('pins run_started_at, active_turn_id, the goal_status replay and goal_state', async () => {
    const reached = gate();
    const release = gate();
    const run = await startWebUiGateway([
      async () => {
        reached.open();
        await release.promise;
        return { text: 'Done.' };
      },
    ]);
    const entry = { run, clients: [] as TestClient[] };
    open.push(entry);
    const client = async () => {
      const c = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
      entry.clients.push(c);
      await c.next((f) => f.event === 'ready');
      return c;
    };
    const get = async <T>(path: string) =>
      (await (await fetch(`${run.url}${path}`, { headers: { authorization: `Bearer ${run.token}` } })).json()) as T;

    const a = await client();
    a.send({ type: 'new_chat' });
    const attached = await a.next((f) => f.event === 'attached');
    const chatId = attached.event === 'attached' ? attached.chat_id : '';
    const key = `websocket:${chatId}`;
    const thread = `/api/sessions/${encodeURIComponent(key)}/webui-thread`;
    a.send({ type: 'message', chat_id: chatId, content: 'work on it', turn_id: 'turn-1', webui: true });
    const running = await a.next((f) => f.event === 'goal_status' && f.status === 'running');
    await reached.promise;

    const started = running.event === 'goal_status' ? running.started_at : undefined;
    expect(started).toEqual(expect.any(Number));
    const rows = await get<{ sessions: SessionListRow[] }>('/api/sessions');
    expect(rows.sessions.find((row) => row.key === key)?.run_started_at).toBe(started);
    expect(await get<{ active_turn_id: string | null }>(thread)).toMatchObject({
      active_turn_id: 'turn-1',
      has_pending_tool_calls: true,
    });

    // A second tab (or a reload) attaching mid-turn is told the turn runs, with the same clock and turn id.
    const b = await client();
    b.send({ type: 'attach', chat_id: chatId });
    await b.next((f) => f.event === 'attached');
    expect(await b.next((f) => 'chat_id' in f && f.chat_id === chatId)).toEqual({
      event: 'goal_status',
      chat_id: chatId,
      status: 'running',
      started_at: started,
      turn_id: 'turn-1',
    });

    release.open();
    const end = await a.next((f) => f.event === 'turn_end' && f.chat_id === chatId, 10_000);
    expect(end).toEqual({ event: 'turn_end', chat_id: chatId, turn_id: 'turn-1', goal_state: { active: false } });
    await a.next((f) => f.event === 'goal_status' && f.status === 'idle');
    const after = await get<{ sessions: SessionListRow[] }>('/api/sessions');
    expect(after.sessions.find((row) => row.key === key)).not.toHaveProperty('run_started_at');
    expect(await get<{ active_turn_id: string | null }>(thread)).toMatchObject({ active_turn_id: null });

    // No goal, no turn: attaching sends nothing more than `attached`.
    const c = await client();
    c.send({ type: 'attach', chat_id: chatId });
    await c.next((f) => f.event === 'attached');
    // A sustained goal in the session (set by /goal and create_goal) shows its strip on attach.
    const sessions = run.gateway.agent().sessions;
    const session = await sessions.load(key);
    session.metadata.goal_state = {
      status: 'active',
      objective: 'Ship version 2',
      ui_summary: 'shipping v2',
      started_at: new Date().toISOString(),
    };
    await sessions.save(session);
    c.send({ type: 'attach', chat_id: chatId });
    await c.next((f) => f.event === 'attached');
    const goal: ServerFrame = await c.next((f) => f.event === 'goal_state');
    expect(goal).toEqual({
      event: 'goal_state',
      chat_id: chatId,
      goal_state: { active: true, status: 'active', ui_summary: 'shipping v2', objective: 'Ship version 2' },
    });
    // Between the first attach and this one, nothing else came for the chat.
    expect(c.frames.filter((f) => 'chat_id' in f && f.chat_id === chatId).map((f) => f.event)).toEqual([
      'attached',
      'attached',
      'goal_state',
    ]);
  });
});
