/**
 * Issue 17 item 7, through the built CLI and a real gateway: `/trigger <name>` in a WebSocket chat creates nanobot's
 * `trg_XXXXXXXX` in `<workspace>/triggers/triggers.json` (nanobot's fields), and `nanobot trigger trg_… "message"`
 * is answered in that chat, not the last active one. `--list`/`--remove` manage them; unknown ids are refused.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from '../channels/websocket/helpers.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeLLM } from '../helpers/fake-llm.js';
import { freePort } from '../mcp/helpers.js';
import { runCli, spawnCli, tempHome } from './cli-helpers.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** nanobot's LocalTrigger.to_dict keys. */
const UPSTREAM_TRIGGER_KEYS = [
  'id',
  'name',
  'enabled',
  'channel',
  'chatId',
  'sessionKey',
  'senderId',
  'originMetadata',
  'createdAtMs',
  'updatedAtMs',
  'lastMessage',
  'lastRunAtMs',
  'lastStatus',
  'lastError',
  'runHistory',
];

describe('nanobot trigger (nanobot’s local triggers)', () => {
  it('creates trg_ ids with /trigger in a chat and answers there', async () => {
    const fake = await startFakeLLM([{ text: 'The build is green.' }]);
    cleanups.push(() => fake.close());
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    const wsPort = await freePort();
    const path = join(home, '.nanobot', 'config.json');
    const config = JSON.parse(readFileSync(path, 'utf8')) as Record<string, Record<string, unknown>>;
    config.agents = { defaults: { ...(config.agents?.defaults as object), provider: 'custom', model: 'test-model' } };
    config.providers = { custom: { apiKey: 'k', apiBase: `${fake.url}/v1` } };
    config.gateway = { heartbeat: { enabled: false } };
    config.channels = { sendToolHints: false, showReasoning: false, websocket: { port: wsPort, pingIntervalS: 60 } };
    writeFileSync(path, JSON.stringify(config, null, 2));

    const gateway = spawnCli(['gateway', '--port', '0'], home);
    cleanups.push(() => gateway.child.kill('SIGKILL'));
    const url = `http://127.0.0.1:${wsPort}`;
    await eventually(async () => (await fetch(`${url}/api/info`).catch(() => undefined))?.status === 401, {
      timeoutMs: 20_000,
    });
    const token = readFileSync(join(home, '.nanobot', 'webui-token'), 'utf8').trim();
    const client = await connect(wsPort, { token, clientId: 'trigger-test', origin: url });
    cleanups.push(() => client.close());
    await client.next((f) => f.event === 'ready');
    client.send({ type: 'new_chat' });
    const attached = await client.next((f) => f.event === 'attached');
    const chatId = attached.event === 'attached' ? attached.chat_id : '';

    client.send({ type: 'message', chat_id: chatId, content: '/trigger deploy bot' });
    const created = await client.next(
      (f) => 'chat_id' in f && f.chat_id === chatId && 'text' in f && /Trigger created/.test(String(f.text)),
    );
    const text = 'text' in created ? String(created.text) : '';
    const id = /ID: (trg_[A-HJ-NP-Z2-9]{8})/.exec(text)?.[1];
    expect(id, text).toBeDefined();
    expect(text).toContain(`nanobot trigger ${id} "message"`);

    const store = JSON.parse(readFileSync(join(home, '.nanobot', 'workspace', 'triggers', 'triggers.json'), 'utf8'));
    expect(store.version).toBe(1);
    expect(Object.keys(store.triggers[0])).toEqual(UPSTREAM_TRIGGER_KEYS);
    expect(store.triggers[0]).toMatchObject({ id, name: 'deploy bot', channel: 'websocket', chatId, enabled: true });

    const listed = await runCli(['trigger', '--list'], home);
    expect(listed.stdout).toContain(`${id}  deploy bot  → websocket:${chatId}`);

    const queued = await runCli(['trigger', id!, 'build 42 finished'], home);
    expect(queued.stderr).toBe('');
    expect(queued.stdout).toMatch(new RegExp(`^Queued ${id} \\(tdl_[0-9a-f]{12}\\) for websocket:${chatId}`));
    await client.next(
      (f) => 'chat_id' in f && f.chat_id === chatId && 'text' in f && String(f.text).includes('The build is green.'),
      20_000,
    );
    const prompt = JSON.stringify(fake.requests[0]?.body.messages);
    expect(prompt).toContain('Local trigger received: deploy bot');
    expect(prompt).toContain('build 42 finished');
    await eventually(() => {
      const after = JSON.parse(readFileSync(join(home, '.nanobot', 'workspace', 'triggers', 'triggers.json'), 'utf8'));
      expect(after.triggers[0]).toMatchObject({ lastStatus: 'ok', lastMessage: 'build 42 finished' });
    });

    const unknown = await runCli(['trigger', 'trg_ZZZZZZZZ', 'x'], home);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/trigger not found: trg_ZZZZZZZZ/);
    expect((await runCli(['trigger', '--remove', id!], home)).stdout).toContain(`Removed ${id}.`);
    expect((await runCli(['trigger', '--list'], home)).stdout).toMatch(/No triggers/);
    expect(gateway.output()).not.toMatch(/triggers\.json\.invalid/);
  });
});
