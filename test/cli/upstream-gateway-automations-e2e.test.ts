/**
 * The built `nanobot gateway` over the latest upstream home (pyhome): nanobot's WebUI lists the jobs nanobot wrote
 * (`GET /api/webui/automations`) and edits one over its WebSocket (`automation.update`, `automation.disable`); the
 * change lands in nanobot's jobs.json through the running scheduler. Our additions work there too: a job added to a
 * WebUI chat (`automation.create`), the heartbeat's settings and HEARTBEAT.md (`GET /api/webui/automations/heartbeat`,
 * `automation.heartbeat.update` into nanobot's config.json).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../channels/websocket/gateway-helpers.js';
import { connect } from '../channels/websocket/helpers.js';
import { eventually } from '../helpers/eventually.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { upstreamHome } from '../helpers/upstream-homes.js';
import { editConfig, spawnCli } from './cli-helpers.js';

const TOKEN = 'py-static-token-0123456789'; // the static token in pyhome's config
type Job = { id: string; name: string; enabled: boolean; schedule: Record<string, unknown> };

let fake: FakeLLM | undefined;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await fake?.close();
  fake = undefined;
});

describe('automations under the built gateway, over an upstream home', () => {
  it('lists the jobs nanobot wrote and edits one through the scheduler', async () => {
    const h = upstreamHome('pyhome');
    cleanups.push(h.cleanup);
    fake = await startFakeLLM();
    const wsPort = await freePort();
    const gatewayPort = await freePort();
    editConfig(h.home, (c) => {
      const providers = c.providers as Record<string, Record<string, unknown>>;
      providers.custom = { ...providers.custom, apiBase: `${fake?.url}/v1` };
      ((c.channels as Record<string, Record<string, unknown>>).websocket as Record<string, unknown>).port = wsPort;
      (c.gateway as Record<string, unknown>).port = gatewayPort;
    });
    const jobsPath = join(h.workspace, 'cron', 'jobs.json');
    const stored = () => (JSON.parse(readFileSync(jobsPath, 'utf8')) as { jobs: Job[] }).jobs;
    const seeded = JSON.parse(readFileSync(jobsPath, 'utf8')) as { jobs: { state: { nextRunAtMs: number } }[] };
    for (const job of seeded.jobs) job.state.nextRunAtMs = Date.now() + 86_400_000;
    writeFileSync(jobsPath, JSON.stringify(seeded, null, 2));

    const gateway = spawnCli(['gateway'], h.home);
    cleanups.push(async () => {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    });
    const c = await eventually(() => connect(wsPort, { token: TOKEN, clientId: 'webui' }), {
      timeoutMs: 20_000,
      intervalMs: 50,
    }).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\ngateway output:\n${gateway.output()}`);
    });
    cleanups.push(() => c.close());
    await c.next((f) => f.event === 'ready');

    const res = await fetch(`http://127.0.0.1:${wsPort}/api/webui/automations`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
    const { jobs } = (await res.json()) as { jobs: (Job & Record<string, unknown>)[] };
    const byName = new Map(jobs.map((job) => [job.name, job]));
    expect(byName.get('water-plants')).toMatchObject({
      schedule: { kind: 'cron', expr: '0 9 * * *', tz: 'Europe/Berlin' },
      payload: { message: 'Remind Alice to water the plants', kind: 'agent_turn' },
      origin: { channel: 'cli', title: '', preview: '' },
      protected: false,
    });
    expect(byName.get('dream')).toMatchObject({ protected: true });
    const id = byName.get('water-plants')?.id ?? '';

    c.send({
      type: 'webui_request',
      request_id: 'u1',
      action: 'automation.update',
      payload: { id, values: { name: 'water the ficus', schedule: { kind: 'cron', expr: '0 8 * * *', tz: 'UTC' } } },
    });
    expect(await c.next((f) => f.event === 'webui_response' && f.request_id === 'u1')).toMatchObject({ ok: true });
    c.send({ type: 'webui_request', request_id: 'd1', action: 'automation.disable', payload: { id } });
    expect(await c.next((f) => f.event === 'webui_response' && f.request_id === 'd1')).toMatchObject({ ok: true });
    expect(stored().find((job) => job.id === id)).toMatchObject({
      name: 'water the ficus',
      enabled: false,
      schedule: { kind: 'cron', expr: '0 8 * * *', tz: 'UTC' },
    });

    // Ours: a job for a WebUI chat, and the heartbeat.
    c.send({ type: 'new_chat' });
    const attached = await c.next((f) => f.event === 'attached');
    const chatId = attached.event === 'attached' ? attached.chat_id : '';
    c.send({
      type: 'webui_request',
      request_id: 'c1',
      action: 'automation.create',
      payload: {
        name: 'tea',
        message: 'Time for tea',
        schedule: { kind: 'every', every_ms: 7_200_000 },
        chat_id: chatId,
      },
    });
    expect(await c.next((f) => f.event === 'webui_response' && f.request_id === 'c1')).toMatchObject({ ok: true });
    await eventually(() => {
      expect(stored().find((job) => job.name === 'tea')).toMatchObject({
        enabled: true,
        schedule: { kind: 'every', everyMs: 7_200_000 },
        payload: { sessionKey: `websocket:${chatId}`, originChannel: 'websocket', originChatId: chatId },
      });
    });
    const beat = await fetch(`http://127.0.0.1:${wsPort}/api/webui/automations/heartbeat`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(beat.status).toBe(200);
    const configPath = join(h.home, '.nanobot', 'config.json');
    const theirs = (JSON.parse(readFileSync(configPath, 'utf8')) as { gateway: { heartbeat: Record<string, unknown> } })
      .gateway.heartbeat;
    expect(((await beat.json()) as { heartbeat: Record<string, unknown> }).heartbeat).toMatchObject({
      enabled: theirs.enabled ?? true,
    });
    c.send({
      type: 'webui_request',
      request_id: 'h1',
      action: 'automation.heartbeat.update',
      payload: { interval_s: 900 },
    });
    expect(await c.next((f) => f.event === 'webui_response' && f.request_id === 'h1')).toMatchObject({
      ok: true,
      result: { heartbeat: { interval_s: 900 }, requires_restart: false },
    });
    const after = JSON.parse(readFileSync(configPath, 'utf8')) as { gateway: { heartbeat: Record<string, unknown> } };
    expect(after.gateway.heartbeat.intervalS).toBe(900);
    // The running heartbeat took the new interval without a restart.
    if (theirs.enabled ?? true) await eventually(() => expect(gateway.output()).toContain('heartbeat: every 900s now'));
    expect(Object.keys(after.gateway.heartbeat)).not.toContain('interval_s');
  });
});
