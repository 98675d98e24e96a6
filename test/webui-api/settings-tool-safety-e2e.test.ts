/**
 * The built `nanobot gateway` over the latest upstream home (pyhome: upstream's onboard wrote
 * `restrictToWorkspace: false` and `exec.sandbox: ""`), driven over the WebUI API: `GET /api/settings` reads those
 * as the Tools page shows them, `settings.tool_safety.update` turns the restriction and the sandbox on and adds a
 * whitelist entry (confirmed), config.json keeps upstream's other keys, and the very next turn runs under the new
 * policy without a restart: a read outside the workspace is refused.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { freePort } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import { editConfig, spawnCli } from '../cli/cli-helpers.js';
import { type FakeLLM, type FakeScriptStep, startFakeLLM } from '../helpers/fake-llm.js';
import { upstreamHome } from '../helpers/upstream-homes.js';

const TOKEN = 'py-static-token-0123456789'; // pyhome's static WebSocket token
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Json = Record<string, unknown>;

describe('the built gateway’s tool safety settings, from the WebUI', () => {
  it('reads upstream’s values, tightens them, and the next turn runs under the new policy', async () => {
    const h = upstreamHome('pyhome');
    cleanups.push(h.cleanup);
    const outside = join(h.home, 'outside-secret.txt');
    // Answers by what was asked (the WebUI's chat also asks for a title, and cron jobs may fire).
    const reply: FakeScriptStep = (body) => {
      const text = JSON.stringify(body);
      if (text.includes('"role":"tool"')) return { text: 'Done reading.' };
      if (text.includes('read the outside file'))
        return { toolCalls: [{ name: 'read_file', arguments: { path: outside } }] };
      return { text: 'A title' };
    };
    const llm: FakeLLM = await startFakeLLM(Array.from({ length: 20 }, () => reply));
    cleanups.push(() => llm.close());
    const wsPort = await freePort();
    const gatewayPort = await freePort();
    editConfig(h.home, (c) => {
      c.providers.custom = { ...(c.providers.custom ?? {}), apiBase: `${llm.url}/v1` };
      const channels = c.channels as Record<string, Json>;
      channels.websocket = { ...channels.websocket, port: wsPort };
      c.gateway = { ...(c.gateway as Json), port: gatewayPort, heartbeat: { enabled: false } };
    });
    const { writeFileSync } = await import('node:fs');
    writeFileSync(outside, 'not for the agent');
    const gateway = spawnCli(['gateway'], h.home);
    cleanups.push(async () => {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    });
    let client: TestClient | undefined;
    await eventually(async () => {
      client = await connect(wsPort, { token: TOKEN, clientId: 'webui' });
    }, 20_000).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n${gateway.output()}`);
    });
    const c = client as TestClient;
    cleanups.push(() => c.close());
    await c.next((f) => f.event === 'ready');
    const res = await fetch(`http://127.0.0.1:${wsPort}/api/settings`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const settings = (await res.json()) as { advanced: Json };
    expect(settings.advanced).toMatchObject({ restrict_to_workspace: false, exec_sandbox: null, ssrf_whitelist: [] });

    c.send({
      type: 'webui_request',
      request_id: 'safety-1',
      action: 'settings.tool_safety.update',
      payload: {
        restrict_to_workspace: true,
        exec_sandbox: 'bwrap',
        ssrf_whitelist: ['10.0.0.0/8'],
        confirm_weaker: true,
      },
    });
    const answer = (await c.next((f) => f.event === 'webui_response', 20_000)) as Json & { result: { advanced: Json } };
    expect(answer).toMatchObject({ ok: true });
    expect(answer.result.advanced).toMatchObject({
      restrict_to_workspace: true,
      exec_sandbox: 'bwrap',
      ssrf_whitelist: ['10.0.0.0/8'],
    });
    const config = JSON.parse(readFileSync(join(h.dataDir, 'config.json'), 'utf8')) as { tools: Json & { exec: Json } };
    expect(config.tools).toMatchObject({ restrictToWorkspace: true, ssrfWhitelist: ['10.0.0.0/8'] });
    expect(config.tools.exec.sandbox).toBe('bwrap');
    // Upstream's other keys are still there, as written.
    expect((config.tools.web as { search: Json }).search).toMatchObject({ provider: 'duckduckgo', maxResults: 5 });

    c.send({ type: 'message', chat_id: 'safety-chat', content: 'Please read the outside file.' });
    await eventually(() => {
      // The last message of the chat's second request: the read's result.
      const tool = llm.requests
        .map((r) => (r.body.messages as { role: string; content: unknown }[]) ?? [])
        .filter((messages) => JSON.stringify(messages).includes('read the outside file'))
        .map((messages) => messages.at(-1))
        .find((m) => m?.role === 'tool');
      expect(JSON.stringify(tool?.content ?? '')).toMatch(/outside|workspace/i);
      expect(JSON.stringify(tool?.content ?? '')).not.toContain('not for the agent');
    }, 20_000).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n${gateway.output()}`);
    });
  }, 90_000);
});
