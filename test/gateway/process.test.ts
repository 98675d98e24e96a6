/**
 * The real binary: `nanobot gateway` takes a `nanobot trigger`, is sent SIGTERM in the middle of that turn, exits
 * within 10 s, and a fresh gateway delivers the trigger again (at least once) with the session intact.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');
let fake: FakeLLM | undefined;
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await fake?.close();
  fake = undefined;
});

function startGateway(home: string): { child: ChildProcess; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [BIN, 'gateway', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited };
}

async function until(check: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('nanobot gateway (process)', () => {
  it('stops on SIGTERM mid-turn without waiting for the model, and redelivers the trigger after a restart', async () => {
    const home = tempHome();
    await runCli(['onboard'], home);
    // The first answer takes 30 s; the flag says whether the gateway waited for it before exiting.
    let answered = false;
    const slow = async () => {
      await new Promise((resolve) => setTimeout(resolve, 30_000).unref());
      answered = true;
      return { text: 'slow answer' };
    };
    fake = await startFakeLLM([slow, { text: 'nightly report done' }]);
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'test-model';
      c.providers.custom = { apiKey: 'k', apiBase: `${fake?.url}/v1` };
    });
    const triggers = join(home, '.nanobot', 'workspace', 'triggers');
    expect((await runCli(['trigger', 'nightly', 'summarise the night'], home)).code).toBe(0);

    const first = startGateway(home);
    await until(() => (fake?.requests.length ?? 0) >= 1, 15_000);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(answered).toBe(false); // it stopped the turn instead of waiting for the model
    expect(readdirSync(triggers).filter((f) => f.endsWith('.json'))).toHaveLength(1); // not delivered yet: kept

    const second = startGateway(home);
    await until(() => readdirSync(triggers).filter((f) => f.endsWith('.json')).length === 0, 15_000);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    const sessionsRoot = join(home, '.nanobot', 'sessions');
    const [ws] = readdirSync(sessionsRoot).filter((d) => !d.startsWith('.'));
    const file = join(sessionsRoot, ws ?? '', `${Buffer.from('trigger:nightly').toString('base64url')}.jsonl`);
    expect(existsSync(file)).toBe(true);
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const messages = lines.filter((l) => l._type === undefined);
    const users = messages.filter((m) => m.role === 'user' && String(m.content).includes('summarise the night'));
    expect(users.length).toBeGreaterThanOrEqual(1);
    expect(messages.at(-1)).toMatchObject({ role: 'assistant', content: 'nightly report done' });
  }, 60_000);
});
