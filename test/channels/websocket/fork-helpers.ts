/** A real gateway with one WebUI connection, for the `fork_chat` tests (and their attack corpus). */
import type { ServerFrame } from '../../../src/channels/websocket/frames.js';
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

export async function forkGateway(answers: string[]) {
  const run = await startWebUiGateway(answers.map((text) => ({ text })));
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

/** The frames a `fork_chat` is answered with, up to the `session_updated` or an `error`. */
export async function forkFrames(client: TestClient, frame: Record<string, unknown>): Promise<ServerFrame[]> {
  const from = client.frames.length;
  client.send({ type: 'fork_chat', ...frame });
  await client.next((f) => client.frames.indexOf(f) >= from && (f.event === 'session_updated' || f.event === 'error'));
  return client.frames.slice(from);
}
