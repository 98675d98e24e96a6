/**
 * Two processes on one session: a turn still running in another live process is not "repaired" as interrupted; a
 * turn whose process was killed is. Both through the built CLI (two real `agent -m`), the first held mid-turn by a
 * gate in the fake LLM.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { INTERRUPTED_REPLY } from '../../src/agent/recovery.js';
import { currentOwner, isCurrentProcess, ownerAlive } from '../../src/util/process-owner.js';
import { eventually } from '../channels/contract.js';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');
const children: ChildProcess[] = [];
const llms: FakeLLM[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const llm of llms.splice(0)) await llm.close();
});

async function homeWith(llm: FakeLLM): Promise<string> {
  const home = tempHome();
  await runCli(['onboard'], home);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${llm.url}/v1` };
  });
  return home;
}

/** A gated first step: the model "thinks" until the test opens the gate. */
function gatedLLM(firstAnswer: string, secondAnswer: string) {
  let open = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  const first = async () => {
    await gate;
    return { text: firstAnswer };
  };
  const steps = [first, { text: secondAnswer }];
  return { steps, open };
}

function startAgent(
  home: string,
  message: string,
): { child: ChildProcess; done: Promise<{ code: number | null; out: string }> } {
  const child = spawn(process.execPath, [BIN, 'agent', '-m', message], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const done = new Promise<{ code: number | null; out: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, out })),
  );
  return { child, done };
}

function sessionMessages(home: string, key = 'cli:direct'): Record<string, unknown>[] {
  const root = join(home, '.nanobot', 'sessions');
  const [ws] = readdirSync(root).filter((d) => !d.startsWith('.'));
  const file = join(root, ws ?? '', `${Buffer.from(key).toString('base64url')}.jsonl`);
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l._type === undefined);
}

describe('two processes on one session', () => {
  it('leaves a turn another live process is running alone; both answers are kept', async () => {
    const { steps, open } = gatedLLM('first answer', 'second answer');
    const llm = await startFakeLLM(steps);
    llms.push(llm);
    const home = await homeWith(llm);

    const first = startAgent(home, 'first question');
    await eventually(() => expect(llm.requests.length).toBe(1), 15_000); // first is mid-turn, held by the gate
    const second = await runCli(['agent', '-m', 'second question'], home);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('second answer');
    expect(second.stderr).not.toMatch(/interrupted/);
    expect(JSON.stringify(llm.requests[1]?.body.messages)).not.toContain(INTERRUPTED_REPLY);

    open();
    const done = await first.done;
    expect(done.code).toBe(0);
    expect(done.out).toContain('first answer');
    const messages = sessionMessages(home);
    expect(JSON.stringify(messages)).not.toContain(INTERRUPTED_REPLY);
    const assistants = messages.filter((m) => m.role === 'assistant').map((m) => m.content);
    expect(assistants).toEqual(expect.arrayContaining(['first answer', 'second answer']));
    const users = messages.filter((m) => m.role === 'user').map((m) => String(m.content));
    expect(users.some((u) => u.includes('first question'))).toBe(true);
    expect(users.some((u) => u.includes('second question'))).toBe(true);
  }, 60_000);

  it('leaves the gateway’s running turn alone when `agent -m -s <its session>` runs beside it', async () => {
    const { steps, open } = gatedLLM('report from the gateway', 'answer from the CLI');
    const llm = await startFakeLLM(steps);
    llms.push(llm);
    const home = await homeWith(llm);
    editConfig(home, (c) => {
      c.gateway = { heartbeat: { enabled: false } };
      c.channels = { websocket: { enabled: false } };
    });
    expect((await runCli(['trigger', 'nightly', 'summarise the night'], home)).code).toBe(0);
    const gateway = spawn(process.execPath, [BIN, 'gateway', '--port', '0'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    children.push(gateway);
    await eventually(() => expect(llm.requests.length).toBe(1), 20_000); // the trigger's turn is mid-way

    const beside = await runCli(['agent', '-m', 'anything new?', '-s', 'trigger:nightly'], home);
    expect(beside.code).toBe(0);
    expect(beside.stdout).toContain('answer from the CLI');
    expect(JSON.stringify(llm.requests[1]?.body.messages)).not.toContain(INTERRUPTED_REPLY);
    open();
    await eventually(() => {
      const messages = sessionMessages(home, 'trigger:nightly');
      expect(messages.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(
        expect.arrayContaining(['report from the gateway', 'answer from the CLI']),
      );
    }, 20_000);
    expect(JSON.stringify(sessionMessages(home, 'trigger:nightly'))).not.toContain(INTERRUPTED_REPLY);
  }, 60_000);

  it('repairs a turn whose process was killed (SIGKILL) before the next one runs', async () => {
    const { steps } = gatedLLM('never sent', 'after the crash');
    const llm = await startFakeLLM(steps);
    llms.push(llm);
    const home = await homeWith(llm);

    const first = startAgent(home, 'doomed question');
    await eventually(() => expect(llm.requests.length).toBe(1), 15_000);
    first.child.kill('SIGKILL');
    await first.done;
    const second = await runCli(['agent', '-m', 'are you there?'], home);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('after the crash');
    expect(JSON.stringify(llm.requests[1]?.body.messages)).toContain(INTERRUPTED_REPLY);
    const messages = sessionMessages(home);
    const doomed = messages.findIndex((m) => m.role === 'user' && String(m.content).includes('doomed question'));
    expect(messages[doomed + 1]).toMatchObject({ role: 'assistant', content: INTERRUPTED_REPLY });
    expect(messages.at(-1)).toMatchObject({ role: 'assistant', content: 'after the crash' });
  }, 60_000);
});

describe('process owner', () => {
  it('tells this process, a live one, a dead pid and a reused pid apart', () => {
    const me = currentOwner();
    expect(isCurrentProcess(me)).toBe(true);
    expect(ownerAlive(me)).toBe(true);
    expect(isCurrentProcess({ pid: process.ppid })).toBe(false);
    expect(ownerAlive({ pid: process.ppid })).toBe(true);
    expect(ownerAlive({ pid: 2 ** 22 + 7 })).toBe(false); // above Linux's pid_max
    if (me.start !== undefined) {
      // Same pid, another start time: a newer process that got the dead owner's pid.
      expect(ownerAlive({ pid: me.pid, start: `${me.start}0` })).toBe(false);
      expect(isCurrentProcess({ pid: me.pid, start: `${me.start}0` })).toBe(false);
    }
  });
});
