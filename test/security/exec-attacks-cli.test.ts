/**
 * The exec attack corpus through the shipped CLI: a scripted hostile model makes `nanobot agent -m` call exec with
 * every deletion spelling and every scheme-less loopback URL, with `sandbox: "none"` so the guard is the only thing
 * in the way. The victim directory in the workspace must survive and the loopback service must see no connection.
 * (Fork bombs are not run here: without a sandbox a miss would take the machine down; exec-sandbox-limits.test.ts
 * runs one inside the sandbox.)
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { DELETION_ATTACKS, SCHEMELESS_URL_ATTACKS } from './exec-attack-corpus.js';

let fake: FakeLLM | undefined;
let server: http.Server | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A loopback HTTP service that counts every TCP connection it gets. */
async function startVictimService(): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  server = http.createServer((_req, res) => res.end('internal secret'));
  server.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, connections: () => connections };
}

/** Tool results the model got back, from the last request it received (OpenAI wire). */
function toolResults(body: Record<string, unknown>): string[] {
  const messages = (body.messages ?? []) as { role: string; content: unknown }[];
  return messages.filter((m) => m.role === 'tool').map((m) => JSON.stringify(m.content));
}

describe('nanobot agent -m: a hostile model calling exec with the attack corpus', () => {
  it('blocks every deletion and loopback spelling; the victim dir survives and the service sees nothing', async () => {
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    const workspace = path.join(home, '.nanobot', 'workspace');
    const victim = path.join(workspace, 'victim');
    fs.mkdirSync(victim, { recursive: true });
    fs.writeFileSync(path.join(victim, 'keep.txt'), 'precious');

    const service = await startVictimService();
    const attacks = [
      ...Object.values(DELETION_ATTACKS).flat(),
      ...SCHEMELESS_URL_ATTACKS.map((command) => command.replaceAll('PORT', String(service.port))),
    ];
    // A control call first: proves exec really runs commands in this setup, so a missed attack would do harm.
    const calls = ['echo control-ran > control.txt', ...attacks].map((command, i) => ({
      id: `call_${i}`,
      name: 'exec',
      arguments: { command, timeout: 5 },
    }));
    // In steps below tools.maxCallsPerResponse (100), so every attack really reaches the guard.
    const steps = [];
    for (let i = 0; i < calls.length; i += 90) steps.push({ toolCalls: calls.slice(i, i + 90) });
    fake = await startFakeLLM([...steps, { text: 'done' }]);
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'test-model';
      c.providers.custom = { apiKey: 'test-key', apiBase: `${fake?.url}/v1` };
      const tools = (c.tools ?? {}) as Record<string, unknown>;
      c.tools = { ...tools, restrictToWorkspace: false, exec: { ...(tools.exec as object), sandbox: 'none' } };
    });

    const result = await runCli(['agent', '-m', 'clean up'], home);
    expect(result.code, result.stderr).toBe(0);
    expect(fs.readFileSync(path.join(workspace, 'control.txt'), 'utf8')).toBe('control-ran\n');

    const last = fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1);
    const results = toolResults(last?.body ?? {});
    expect(results).toHaveLength(calls.length);
    const missed = attacks.filter((_, i) => !/Command blocked by (safety|network) guard/.test(results[i + 1] ?? ''));
    expect(missed, `not blocked:\n${missed.join('\n')}`).toEqual([]);
    expect(fs.readFileSync(path.join(victim, 'keep.txt'), 'utf8')).toBe('precious');
    expect(service.connections()).toBe(0);
  }, 120_000);
});
