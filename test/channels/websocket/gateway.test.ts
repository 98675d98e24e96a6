import { writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type {
  ServerFrame,
  SessionListRow,
  SidebarStateView,
  StatusReport,
  ThreadResponse,
} from '../../../src/channels/websocket/frames.js';
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

async function start(script: Parameters<typeof startWebUiGateway>[0]) {
  const run = await startWebUiGateway(script);
  const entry = { run, clients: [] as TestClient[] };
  open.push(entry);
  const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  entry.clients.push(client);
  await client.next((f) => f.event === 'ready');
  client.send({ type: 'new_chat' });
  const attached = await client.next((f) => f.event === 'attached');
  const chatId = attached.event === 'attached' ? attached.chat_id : '';
  const get = async <T>(path: string, init: RequestInit = {}): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${run.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${run.token}`, 'content-type': 'application/json' },
    });
    return { status: res.status, body: (await res.json()) as T };
  };
  return { run, client, chatId, get };
}

/** The frames of one turn, up to the idle goal_status after its turn_end (not new_chat's attached and row update). */
async function turnFrames(client: TestClient, chatId: string): Promise<ServerFrame[]> {
  await client.next((f) => f.event === 'goal_status' && f.status === 'idle' && f.chat_id === chatId, 10_000);
  const frames = client.frames.filter(
    (f) =>
      'chat_id' in f &&
      f.chat_id === chatId &&
      f.event !== 'attached' &&
      !(f.event === 'session_updated' && f.scope === 'metadata'),
  );
  return frames;
}

describe('WebSocket channel in a running gateway', () => {
  it('streams reasoning, tool calls and the answer in order, then serves the chat over REST', async () => {
    const { run, client, chatId, get } = await start([
      { reasoning: 'The user wants the notes.', toolCalls: [{ name: 'read_file', arguments: { path: 'notes.md' } }] },
      { text: 'Your notes say **hello world**.' },
    ]);
    writeFileSync(join(run.workspace, 'notes.md'), 'hello world\n');
    client.send({ type: 'message', chat_id: chatId, content: 'What do my notes say?' });
    const frames = await turnFrames(client, chatId);

    // A tool call is a `message` row: its start with the hint (`tool_hint`), its end with the result (`progress`).
    const kinds = frames.map((f) => (f.event === 'message' && f.kind ? f.kind : f.event));
    const collapsed = kinds.filter((kind, i) => kind !== kinds[i - 1]);
    expect(collapsed).toEqual([
      'goal_status',
      'turn_model_updated',
      'reasoning_delta',
      'reasoning_end',
      'tool_hint',
      'progress',
      'delta',
      'stream_end',
      'turn_end',
      'session_updated',
      'goal_status',
    ]);
    const reasoning = frames.flatMap((f) => (f.event === 'reasoning_delta' ? [f.text] : [])).join('');
    expect(reasoning).toBe('The user wants the notes.');
    const tools = frames.flatMap((f) => (f.event === 'message' ? (f.tool_events ?? []) : []));
    const callId = tools[0]?.call_id;
    expect(tools).toEqual([
      {
        version: 1,
        phase: 'start',
        call_id: callId,
        name: 'read_file',
        arguments: { path: 'notes.md' },
        result: null,
        error: null,
        files: [],
        embeds: [],
      },
      {
        version: 1,
        phase: 'end',
        call_id: callId,
        name: 'read_file',
        arguments: { path: 'notes.md' },
        result: expect.stringContaining('hello world'),
        error: null,
        files: [],
        embeds: [],
      },
    ]);
    const streamed = frames.flatMap((f) => (f.event === 'delta' ? [f.text] : [])).join('');
    expect(streamed).toBe('Your notes say **hello world**.');
    const end = frames.find((f) => f.event === 'stream_end');
    expect(end).toMatchObject({ text: 'Your notes say **hello world**.' });
    const deltaIds = new Set(frames.flatMap((f) => (f.event === 'delta' ? [f.stream_id] : [])));
    expect([...deltaIds]).toEqual([end?.event === 'stream_end' ? end.stream_id : '']);

    const list = await get<{ sessions: SessionListRow[] }>('/api/sessions');
    expect(list.body.sessions).toEqual([
      expect.objectContaining({ key: `websocket:${chatId}`, title: '', preview: 'What do my notes say?' }),
    ]);
    const key = encodeURIComponent(`websocket:${chatId}`);
    const thread = await get<ThreadResponse>(`/api/sessions/${key}/webui-thread`);
    expect(thread.body.messages.map((m) => [m.role, m.kind ?? '', m.content])).toEqual([
      ['user', '', 'What do my notes say?'],
      ['assistant', '', ''],
      ['tool', 'trace', 'read_file({"path":"notes.md"})'],
      ['assistant', '', 'Your notes say **hello world**.'],
    ]);
    expect(thread.body.messages[1]?.reasoning).toBe('The user wants the notes.');
    expect(String(thread.body.messages[2]?.toolEvents?.[0]?.result)).toContain('hello world');

    // Our old per-chat routes are gone: one protocol, nanobot's (mutations go over the WebSocket).
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      expect((await get(`/api/sessions/${chatId}`, { method })).status).toBe(method === 'GET' ? 404 : 405);
    }
    client.send({
      type: 'webui_request',
      request_id: 'rename-1',
      action: 'sidebar.update',
      payload: { state: { title_overrides: { [`websocket:${chatId}`]: 'Notes' } } },
    });
    await client.next((f) => f.event === 'webui_response' && f.request_id === 'rename-1' && f.ok);
    expect((await get<SidebarStateView>('/api/webui/sidebar-state')).body.title_overrides).toEqual({
      [`websocket:${chatId}`]: 'Notes',
    });

    client.send({
      type: 'webui_request',
      request_id: 'del-1',
      action: 'session.delete',
      payload: { key: `websocket:${chatId}` },
    });
    const deleted = await client.next((f) => f.event === 'webui_response' && f.request_id === 'del-1');
    expect(deleted).toMatchObject({ ok: true, result: { deleted: true } });
    expect((await get<{ sessions: SessionListRow[] }>('/api/sessions')).body.sessions).toEqual([]);
  });

  it('reports model, provider, context use, channels and cron jobs', async () => {
    const { run, client, chatId, get } = await start([{ text: 'Hi!' }]);
    await mkdir(join(run.workspace, 'cron'), { recursive: true });
    writeFileSync(
      join(run.workspace, 'cron', 'jobs.json'),
      JSON.stringify({
        version: 1,
        jobs: [
          {
            id: 'j1',
            name: 'water plants',
            schedule: { kind: 'every', everyMs: 3_600_000 },
            // Bound to a chat: nanobot (and we) disable an agent job that is not.
            payload: { sessionKey: `websocket:${chatId}`, originChannel: 'websocket', originChatId: chatId },
          },
        ],
      }),
    );
    client.send({ type: 'message', chat_id: chatId, content: 'hello' });
    await turnFrames(client, chatId);
    // The job bound to this chat is its automation (nanobot's `/api/sessions/<key>/automations`).
    const automations = await get<{ jobs: { id: string; name: string; schedule: { every_ms: number } }[] }>(
      `/api/sessions/${encodeURIComponent(`websocket:${chatId}`)}/automations`,
    );
    expect(automations.body.jobs).toEqual([
      expect.objectContaining({
        id: 'j1',
        name: 'water plants',
        schedule: expect.objectContaining({ every_ms: 3_600_000 }),
      }),
    ]);
    const elsewhere = await get<{ jobs: unknown[] }>('/api/sessions/websocket%3Aother-chat/automations');
    expect(elsewhere.body.jobs).toEqual([]);
    const status = await get<StatusReport>(`/api/status?chat_id=${chatId}`);
    expect(status.body).toMatchObject({
      model: 'test-model',
      provider: 'custom',
      channels: { websocket: 'running' },
      cron: [{ id: 'j1', name: 'water plants', enabled: true, schedule: 'every 3600 s' }],
    });
    expect(status.body.context?.used).toBeGreaterThan(0);
    expect(status.body.context?.window).toBeGreaterThan(1000);
    // The panel's figure is /status's: the system prompt and tool definitions count, not only the history.
    client.send({ type: 'message', chat_id: chatId, content: '/status' });
    const reply = await client.next((f) => f.event === 'message' && f.chat_id === chatId && /Context:/.test(f.text));
    const said = reply.event === 'message' ? /Context: ~([\d,.]+k?)/.exec(reply.text)?.[1] : undefined;
    const again = await get<StatusReport>(`/api/status?chat_id=${chatId}`);
    expect(said).toBe((again.body.context?.used ?? 0).toLocaleString('en-US'));
    expect(again.body.context?.used).toBeGreaterThan(500);
  });

  it('/stop ends a running turn, and the chat can go on', async () => {
    // A gate, not a sleep: /stop is sent once the turn's model call has reached the fake (which then takes 30 s).
    const reached = gate();
    const slow = async () => {
      reached.open();
      await new Promise((resolve) => setTimeout(resolve, 30_000).unref());
      return { text: 'too slow' };
    };
    const { client, chatId } = await start([slow, { text: 'Back again.' }]);
    client.send({ type: 'message', chat_id: chatId, content: 'think for a long time' });
    await reached.promise;
    client.send({ type: 'message', chat_id: chatId, content: '/stop' });
    const stopped = await client.next((f) => f.event === 'message' && f.chat_id === chatId, 10_000);
    expect(stopped.event === 'message' && stopped.text).toMatch(/stop/i);
    await client.next((f) => f.event === 'turn_end');
    client.send({ type: 'message', chat_id: chatId, content: 'still there?' });
    await client.next((f) => f.event === 'stream_end' && f.text === 'Back again.', 10_000);
  });
});
