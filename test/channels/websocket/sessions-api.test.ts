/**
 * The chat list and old chats as nanobot's clients read them (webui/src/lib/api.ts `listSessions`,
 * `fetchWebuiThread`, nanobot-client.ts `requestMutation`): `/api/sessions` rows, `/api/sessions/<key>/webui-thread`
 * pages folded from the transcript (or the session), and `webui_request` → `webui_response` for delete and the
 * sidebar state. Against a real upstream home and against chats run here, through the gateway as it ships.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../../src/channels/websocket/frames.js';
import { type UpstreamHome, upstreamHome } from '../../helpers/upstream-homes.js';
import { startWebUiGateway, type WebUiGateway } from './gateway-helpers.js';
import { connect, type TestClient } from './helpers.js';

const PY_TOKEN = 'py-static-token-0123456789';
const open: { run: WebUiGateway; clients: TestClient[]; py?: UpstreamHome }[] = [];
afterEach(async () => {
  for (const { run, clients, py } of open.splice(0)) {
    for (const client of clients) await client.close();
    await run.close();
    py?.cleanup();
  }
});

async function gateway(script: Parameters<typeof startWebUiGateway>[0], py?: UpstreamHome) {
  const run = py ? await startWebUiGateway(script, { token: PY_TOKEN }, py.home) : await startWebUiGateway(script);
  open.push({ run, clients: [], ...(py ? { py } : {}) });
  return run;
}

async function client(run: WebUiGateway): Promise<TestClient> {
  const c = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  open.at(-1)?.clients.push(c);
  await c.next((f) => f.event === 'ready');
  return c;
}

async function chat(c: TestClient, chatId: string, content: string) {
  c.send({ type: 'attach', chat_id: chatId });
  await c.next((f) => f.event === 'attached');
  c.send({ type: 'message', chat_id: chatId, content });
  await c.next((f) => f.event === 'turn_end' && 'chat_id' in f && f.chat_id === chatId, 10_000);
}

async function get(run: WebUiGateway, path: string, token: string | null = run.token) {
  const res = await fetch(`${run.url}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: string } };
}

const thread = (key: string, query = '') => `/api/sessions/${encodeURIComponent(key)}/webui-thread${query}`;

type Row = Record<string, unknown> & { key: string };
type Msg = Record<string, unknown> & { role: string; content: string };

async function request(c: TestClient, request_id: string, action: unknown, payload: unknown) {
  c.send({ type: 'webui_request', request_id, action, payload });
  return c.next((f) => f.event === 'webui_response' && f.request_id === request_id);
}

describe('the chat list and old chats, as nanobot reads them', () => {
  it('lists and opens the chat a real upstream gateway had, its user turn filled in from the session', async () => {
    const run = await gateway([], upstreamHome('pyhome'));
    const list = await get(run, '/api/sessions');
    expect(list.status).toBe(200);
    const rows = list.body.sessions as Row[];
    // WebSocket chats only: `cli:direct` and `old` are not the WebUI's.
    expect(rows.map((r) => r.key)).toEqual(['websocket:py-web-chat-1']);
    expect(rows[0]).toMatchObject({
      key: 'websocket:py-web-chat-1',
      created_at: '2026-12-01T19:20:30.633398',
      title: '',
      preview: 'hello from the python webui',
      model_preset: null,
      workspace_scope: { project_path: join(run.home, '.nanobot', 'workspace'), access_mode: 'full' },
    });
    expect(typeof rows[0]?.updated_at).toBe('string');

    const page = await get(run, thread('websocket:py-web-chat-1', '?limit=40&direction=latest'));
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({
      schemaVersion: 3,
      sessionKey: 'websocket:py-web-chat-1',
      completed_turn_ids: [],
      has_pending_tool_calls: false,
      active_turn_id: null,
      page: { before_cursor: null, has_more_before: false, loaded_message_count: 2, user_message_offset: 0 },
    });
    const messages = page.body.messages as Msg[];
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'hello from the python webui'],
      ['assistant', 'Hi from the Python gateway.'],
    ]);
    expect(messages[1]).toMatchObject({ latencyMs: 651, contextWindowTokens: 200000, createdAt: 1796152831328 });
    expect(messages[1]?.usage).toMatchObject({ prompt_tokens: 2436, completion_tokens: 7 });
    // Ids are stable across reads (the client merges pages by them).
    const again = await get(run, thread('websocket:py-web-chat-1', '?limit=40&direction=latest'));
    expect((again.body.messages as Msg[]).map((m) => m.id)).toEqual(messages.map((m) => m.id));
    expect(new Set(messages.map((m) => m.id)).size).toBe(2);

    // The TUI's context view and the chat's automations (its cron jobs are bound to cli:direct, not this chat).
    const context = await get(run, '/api/sessions/websocket%3Apy-web-chat-1/context');
    expect(context.body).toMatchObject({
      schema_version: 1,
      session_key: 'websocket:py-web-chat-1',
      total_messages: 2,
      archived_messages: 0,
      replay_messages: 2,
      archived_summary: null,
      last_usage: { prompt_tokens: 2436, completion_tokens: 7 },
    });
    expect(context.body.estimated_session_tokens).toBeGreaterThan(0);
    expect((await get(run, '/api/sessions/websocket%3Apy-web-chat-1/automations')).body).toEqual({ jobs: [] });
    expect((await get(run, '/api/sessions/websocket%3Anone/context')).status).toBe(404);
  });

  it('refuses bad thread queries and keys as nanobot does (400 / 404), and every route without the token', async () => {
    const run = await gateway([{ text: 'ok' }]);
    await chat(await client(run), 'c1', 'hi');
    const cases: [string, number][] = [
      [thread('websocket:c1', '?limit=abc'), 400],
      [thread('websocket:c1', '?limit=1.5'), 400],
      [thread('websocket:c1', '?direction=oldest'), 400],
      [thread('websocket:c1', '?direction='), 400],
      [thread('cli:direct'), 404],
      [thread('telegram:c1'), 404],
      [thread('websocket:'), 404],
      [thread('websocket:no-such-chat'), 404],
      [`/api/sessions/${encodeURIComponent('websocket:a b')}/webui-thread`, 400],
      [`/api/sessions/${encodeURIComponent('websocket:../../etc')}/webui-thread`, 400],
      [`/api/sessions/%E0%A4%A/webui-thread`, 400],
      ['/api/sessions/websocket%3Ac1/nope', 404],
      ['/api/sessions/websocket%3Ac1/webui-thread/more', 404],
      [thread('websocket:c1', '?limit=0'), 200],
      [thread('websocket:c1', '?before=garbage'), 200],
    ];
    for (const [path, status] of cases) expect([path, (await get(run, path)).status]).toEqual([path, status]);
    const routes = [
      '/api/sessions',
      '/api/commands',
      thread('websocket:c1'),
      '/api/sessions/websocket%3Ac1/context',
      '/api/sessions/websocket%3Ac1/automations',
      '/api/webui/sidebar-state',
    ];
    for (const [i, path] of routes.entries()) {
      expect([path, (await get(run, path, null)).status]).toEqual([path, 401]);
      // (Not on every route: ten wrong tokens a minute and the address is limited, 429.)
      if (i < 2) expect([path, (await get(run, path, 'wrong-token')).status]).toEqual([path, 401]);
      const cross = await fetch(`${run.url}${path}`, {
        headers: { authorization: `Bearer ${run.token}`, origin: 'http://evil.example' },
      });
      expect([path, cross.status]).toEqual([path, 403]);
    }
    // Mutations are WebSocket-only, as in nanobot.
    const del = await fetch(`${run.url}/api/sessions/websocket%3Ac1/delete`, {
      headers: { authorization: `Bearer ${run.token}` },
    });
    expect(del.status).toBe(405);
  });

  it("/api/commands lists the slash commands this gateway runs, in nanobot's palette shape", async () => {
    const run = await gateway([]);
    const { status, body } = await get(run, '/api/commands');
    expect(status).toBe(200);
    const commands = body.commands as Record<string, unknown>[];
    const byName = new Map(commands.map((c) => [c.command, c]));
    expect(byName.get('/stop')).toMatchObject({ lifecycle: 'stop_active_turn', accepts_args: false, icon: 'square' });
    expect(byName.get('/new')).toMatchObject({ lifecycle: 'finalize_active_turn' });
    expect(byName.get('/help')).toMatchObject({ lifecycle: 'side_channel', title: 'Show this help' });
    // Every row has what the client keeps (it drops a row whose lifecycle it does not know).
    const lifecycles = [
      'side_channel',
      'finalize_active_turn',
      'stop_active_turn',
      'agent_turn',
      'agent_turn_with_args',
    ];
    for (const c of commands) {
      expect(Object.keys(c).sort()).toEqual([
        'accepts_args',
        'arg_hint',
        'command',
        'description',
        'icon',
        'lifecycle',
        'title',
      ]);
      expect(lifecycles).toContain(c.lifecycle);
      expect(c.accepts_args).toBe(String(c.arg_hint).length > 0);
    }
    expect(commands.some((c) => c.accepts_args === true)).toBe(true);
  });

  it('shows tool calls from the transcript, pages whole turns newest first, and falls back to the session', async () => {
    const run = await gateway([
      { reasoning: 'Look at the notes.', toolCalls: [{ name: 'list_dir', arguments: { path: '.' } }] },
      { text: 'First answer.' },
      { text: 'Second answer.' },
      { text: 'Third answer.' },
    ]);
    const c = await client(run);
    await chat(c, 'c1', 'What is here?');
    await chat(c, 'c1', 'And now?');
    await chat(c, 'c1', 'Last one');

    const all = await get(run, thread('websocket:c1'));
    const messages = all.body.messages as Msg[];
    expect(messages.map((m) => [m.role, m.kind ?? '', m.content])).toEqual([
      ['user', '', 'What is here?'],
      // The reasoning before a tool call is a row of its own (nanobot keeps it when a trace follows).
      ['assistant', '', ''],
      ['tool', 'trace', 'list_dir({"path":"."})'],
      ['assistant', '', 'First answer.'],
      ['user', '', 'And now?'],
      ['assistant', '', 'Second answer.'],
      ['user', '', 'Last one'],
      ['assistant', '', 'Third answer.'],
    ]);
    expect(messages[1]?.reasoning).toBe('Look at the notes.');
    const trace = messages[2] ?? { role: '', content: '' };
    expect(trace.toolEvents).toEqual([
      expect.objectContaining({ version: 1, phase: 'end', name: 'list_dir', arguments: { path: '.' } }),
    ]);
    expect(String((trace.toolEvents as { result: string }[])[0]?.result)).toBeTruthy();
    expect(all.body.page).toBeUndefined();

    // Pages: the newest turn first, then older ones through the cursor, until none are left.
    const first = await get(run, thread('websocket:c1', '?limit=1&direction=latest'));
    expect((first.body.messages as Msg[]).map((m) => m.content)).toEqual(['Last one', 'Third answer.']);
    const p1 = first.body.page as { before_cursor: string; has_more_before: boolean; user_message_offset: number };
    expect(p1).toMatchObject({ has_more_before: true, user_message_offset: 2, loaded_message_count: 2 });
    const second = await get(run, thread('websocket:c1', `?limit=1&before=${p1.before_cursor}`));
    expect((second.body.messages as Msg[]).map((m) => m.content)).toEqual(['And now?', 'Second answer.']);
    const p2 = second.body.page as { before_cursor: string };
    const third = await get(run, thread('websocket:c1', `?limit=1&before=${p2.before_cursor}`));
    expect((third.body.messages as Msg[])[0]?.content).toBe('What is here?');
    expect(third.body.page).toMatchObject({ before_cursor: null, has_more_before: false, user_message_offset: 0 });
    // The ids of a message are the same whichever page it came in.
    expect((first.body.messages as Msg[]).map((m) => m.id)).toEqual(messages.slice(6).map((m) => m.id));

    // Without its transcript, the chat is shown from the session: same turns, same tool card.
    rmSync(join(run.dataDir, 'webui', 'websocket_c1.jsonl'));
    const fromSession = (await get(run, thread('websocket:c1'))).body.messages as Msg[];
    expect(fromSession.map((m) => [m.role, m.kind ?? '', m.content])).toEqual(
      messages.map((m) => [m.role, m.kind ?? '', m.content]),
    );
    expect((fromSession[2]?.toolEvents as { phase: string }[] | undefined)?.[0]?.phase).toBe('end');
    const rows = (await get(run, '/api/sessions')).body.sessions as Row[];
    expect(rows.map((r) => [r.key, r.preview])).toEqual([['websocket:c1', 'What is here?']]);
  });

  it('webui_request: renames through the sidebar state, deletes a chat, answers the rest as nanobot would', async () => {
    const run = await gateway([{ text: 'one' }, { text: 'two' }]);
    const c = await client(run);
    const other = await client(run);
    await chat(c, 'keep', 'keep me');
    await chat(c, 'gone', 'delete me');

    const state = {
      title_overrides: { 'websocket:keep': '  Kept chat  ', 'websocket:x': '' },
      pinned_keys: ['websocket:keep', 7],
      junk: 1,
    };
    const renamed = await request(c, 'r-1', 'sidebar.update', { state });
    expect(renamed).toMatchObject({ event: 'webui_response', request_id: 'r-1', ok: true });
    const stored = (renamed as { result: Record<string, unknown> }).result;
    expect(stored).toMatchObject({
      schema_version: 1,
      title_overrides: { 'websocket:keep': 'Kept chat' },
      pinned_keys: ['websocket:keep'],
    });
    expect(stored.junk).toBeUndefined();
    expect(typeof stored.updated_at).toBe('string');
    const pushed = await other.next((f) => f.event === 'sidebar_state_updated');
    expect((pushed as { state: unknown }).state).toEqual(stored);
    expect((await get(run, '/api/webui/sidebar-state')).body).toEqual(stored);
    expect(existsSync(join(run.dataDir, 'webui', 'sidebar-state.json'))).toBe(true);

    const deleted = await request(c, 'd-1', 'session.delete', { key: 'websocket:gone' });
    expect(deleted).toEqual({ event: 'webui_response', request_id: 'd-1', ok: true, result: { deleted: true } });
    expect(existsSync(join(run.dataDir, 'webui', 'websocket_gone.jsonl'))).toBe(false);
    expect((await get(run, thread('websocket:gone'))).status).toBe(404);
    expect(((await get(run, '/api/sessions')).body.sessions as Row[]).map((r) => r.key)).toEqual(['websocket:keep']);
    const again = await request(c, 'd-2', 'session.delete', { key: 'websocket:gone' });
    expect(again).toMatchObject({ ok: true, result: { deleted: false } });

    const refusals: [unknown, unknown, number, string][] = [
      ['session.delete', {}, 400, 'missing session key'],
      ['session.delete', { key: 'cli:direct' }, 404, 'session not found'],
      ['session.delete', { key: 'websocket:../x' }, 400, 'invalid session key'],
      ['sidebar.update', {}, 400, 'missing state'],
      ['sidebar.update', { state: [1] }, 400, 'state must be an object'],
      ['sidebar.update', { state: 'x' }, 400, 'state must be an object'],
      ['Session.Delete', {}, 400, 'invalid WebUI mutation action'],
      [42, {}, 400, 'invalid WebUI mutation action'],
      ['session.delete', [], 400, 'WebUI mutation payload must be an object'],
      ['session.delete', null, 400, 'WebUI mutation payload must be an object'],
      ['no.such.action', {}, 404, 'unknown WebUI mutation action'],
    ];
    for (const [i, [action, payload, status, message]] of refusals.entries()) {
      const answer = await request(c, `x-${i}`, action, payload);
      expect([action, answer]).toEqual([
        action,
        { event: 'webui_response', request_id: `x-${i}`, ok: false, error: { status, message } },
      ]);
    }
    for (const action of ['settings.transcription.update']) {
      const answer = (await request(c, `s-${action}`, action, {})) as { error: { status: number; message: string } };
      expect([action, answer.error.status]).toEqual([action, 501]);
      expect(answer.error.message).toContain('not supported');
    }
    // An unusable request_id cannot be answered by id: an error frame, the connection stays.
    for (const id of ['', 'has space', 'x'.repeat(129), 5]) {
      c.send({ type: 'webui_request', request_id: id, action: 'sidebar.update', payload: {} });
      const frame: ServerFrame = await c.next((f) => f.event === 'error');
      expect(frame).toMatchObject({ detail: 'invalid webui request_id' });
    }
    expect((await request(c, 'last', 'sidebar.update', { state: {} })).event).toBe('webui_response');
  });
});
