/** A gateway running a cron service, seeded with nanobot-shaped jobs and a local trigger, and a WebUI client. */
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import type { FakeScriptStep } from '../helpers/fake-llm.js';

const open: { run: WebUiGateway; client: TestClient }[] = [];
afterEach(async () => {
  for (const { run, client } of open.splice(0)) {
    await client.close();
    await run.close();
  }
});

export type Job = Record<string, unknown> & {
  id: string;
  state: Record<string, unknown>;
  schedule: Record<string, unknown>;
};
export type Answer = { ok: boolean; result?: { jobs: Job[] }; error?: { status: number; message: string } };
export const HOUR = 3_600_000;

/** jobs.json with a bound WebUI job, a job of another channel, a job bound to no chat and nanobot's Dream job. */
function seedJobs(workspace: string, chatId: string): void {
  const bound = (id: string, name: string, channel: string, chat: string) => ({
    id,
    name,
    schedule: { kind: 'every', everyMs: HOUR },
    payload: {
      kind: 'agent_turn',
      message: `${name} now`,
      sessionKey: `${channel}:${chat}`,
      originChannel: channel,
      originChatId: chat,
    },
    state: { nextRunAtMs: Date.now() + HOUR, runHistory: [{ runAtMs: 1000, status: 'ok', durationMs: 12 }] },
    createdAtMs: 1,
    updatedAtMs: 2,
  });
  const jobs = [
    bound('web1', 'water plants', 'websocket', chatId),
    bound('tg1', 'stretch', 'telegram', '42'),
    {
      id: 'old1',
      name: 'legacy',
      schedule: { kind: 'every', everyMs: HOUR },
      payload: { message: 'x' },
    },
    {
      id: 'dream',
      name: 'dream',
      schedule: { kind: 'cron', expr: '0 */2 * * *' },
      payload: { kind: 'system_event', message: 'dream' },
    },
  ];
  writeFileSync(join(workspace, 'cron', 'jobs.json'), JSON.stringify({ version: 1, jobs }, null, 2));
}

function seedTrigger(workspace: string, chatId: string): void {
  const trigger = {
    id: 'trg_ABCDEFGH',
    name: 'deploy hook',
    enabled: true,
    channel: 'websocket',
    chatId,
    sessionKey: `websocket:${chatId}`,
    createdAtMs: 5,
    updatedAtMs: 6,
    lastMessage: '',
    runHistory: [],
  };
  writeFileSync(join(workspace, 'triggers', 'triggers.json'), JSON.stringify({ version: 1, triggers: [trigger] }));
}

export async function start(script: FakeScriptStep[] = []) {
  const run = await startWebUiGateway(script, {}, undefined, {}, { cron: true });
  const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  open.push({ run, client });
  await client.next((f) => f.event === 'ready');
  client.send({ type: 'new_chat' });
  const attached = await client.next((f) => f.event === 'attached');
  const chatId = attached.event === 'attached' ? attached.chat_id : '';
  await mkdir(join(run.workspace, 'cron'), { recursive: true });
  await mkdir(join(run.workspace, 'triggers'), { recursive: true });
  seedJobs(run.workspace, chatId);
  seedTrigger(run.workspace, chatId);
  const get = async (path: string) => {
    const res = await fetch(`${run.url}${path}`, { headers: { authorization: `Bearer ${run.token}` } });
    return { status: res.status, body: (await res.json()) as { jobs: Job[] } };
  };
  let n = 0;
  const request = async (action: string, payload: unknown): Promise<Answer> => {
    const requestId = `r${++n}`;
    client.send({ type: 'webui_request', request_id: requestId, action, payload });
    const frame = await client.next((f) => f.event === 'webui_response' && f.request_id === requestId);
    return frame as unknown as Answer;
  };
  const stored = () =>
    (JSON.parse(readFileSync(join(run.workspace, 'cron', 'jobs.json'), 'utf8')) as { jobs: Job[] }).jobs;
  return { run, client, chatId, get, request, stored };
}

export const byId = (jobs: Job[], id: string) => jobs.find((job) => job.id === id);

/** The fields that make a stored job what it is (its id, times and next run differ between two adds of it). */
export function essence(job: Job): Record<string, unknown> {
  const { id: _id, createdAtMs: _c, updatedAtMs: _u, state, ...rest } = job;
  return { ...rest, stateKeys: Object.keys(state).sort(), history: state.runHistory };
}
