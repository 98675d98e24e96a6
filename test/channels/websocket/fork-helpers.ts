/** A real gateway with one WebUI connection, for the `fork_chat` tests (and their attack corpus). */
import type { ServerFrame } from '../../../src/channels/websocket/frames.js';
import type { FakeScriptStep } from '../../helpers/fake-llm.js';
import { startWebUiGateway, type WebUiGateway } from './gateway-helpers.js';
import { connect, type TestClient } from './helpers.js';

const open: { run: WebUiGateway; clients: TestClient[] }[] = [];
export async function closeForkGateways(): Promise<void> {
  for (const { run, clients } of open.splice(0)) {
    for (const client of clients) await client.close();
    await run.close();
  }
}

export interface Thread {
  messages: { role: string; content: string }[];
  fork_boundary_message_count?: number;
}

/** `answers`: the fake model's replies in order (text, or a step of its own). */
export async function forkGateway(answers: (string | FakeScriptStep)[]) {
  const run = await startWebUiGateway(answers.map((a) => (typeof a === 'string' ? { text: a } : a)));
  const entry = { run, clients: [] as TestClient[] };
  open.push(entry);
  const boot = (await (
    await fetch(`${run.url}/webui/bootstrap`, { headers: { 'X-Nanobot-Auth': run.token } })
  ).json()) as { token: string; api_token: string };
  const client = await connect(run.port, { token: boot.token, clientId: 'webui-1' });
  entry.clients.push(client);
  await client.next((f) => f.event === 'ready');
  const api = async (path: string) => {
    const res = await fetch(`${run.url}${path}`, { headers: { authorization: `Bearer ${boot.api_token}` } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const thread = async (chatId: string) =>
    (await api(`/api/sessions/${encodeURIComponent(`websocket:${chatId}`)}/webui-thread?limit=120&direction=latest`))
      .body as unknown as Thread;
  let turns = 0;
  const turn = async (chatId: string, content: string) => {
    const turnId = `turn-${++turns}`;
    client.send({ type: 'message', chat_id: chatId, content, turn_id: turnId, webui: true });
    await client.next((f) => f.event === 'goal_status' && f.status === 'idle' && f.turn_id === turnId, 10_000);
  };
  return { run, client, api, thread, turn };
}

export const visible = (t: Thread) => t.messages.map((m) => ({ role: m.role, content: m.content }));

/** The frames since a `fork_chat` was sent, up to the new chat's `session_updated` or an `error`. */
export async function forkFrames(client: TestClient, frame: Record<string, unknown>): Promise<ServerFrame[]> {
  const from = client.frames.length;
  client.send({ type: 'fork_chat', ...frame });
  // Another chat's frames (a running turn's) may arrive meanwhile: wait for the fork's own session_updated.
  const attachedIds = () => client.frames.slice(from).flatMap((f) => (f.event === 'attached' ? [f.chat_id] : []));
  await client.next(
    (f) =>
      client.frames.indexOf(f) >= from &&
      (f.event === 'error' || (f.event === 'session_updated' && attachedIds().includes(f.chat_id))),
  );
  return client.frames.slice(from);
}
