/** Background exec sessions: yield_time_ms, write_stdin, list_exec_sessions, limits and cleanup. */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { realSandboxHost } from '../../src/security/sandbox.js';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createExecTool, type ExecToolOptions } from '../../src/tools/exec.js';
import {
  createExecSessionManager,
  createListExecSessionsTool,
  createWriteStdinTool,
  type ExecSessionManager,
  type ExecSessionManagerOptions,
  MAX_EXEC_SESSIONS,
} from '../../src/tools/exec-sessions.js';
import type { ToolContext } from '../../src/tools/types.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

/** True when the process does not exist or is a zombie (in containers PID 1 may never reap orphans). */
function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    return /^\d+ \(.*\) [ZX]/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/** True when no live (non-zombie) process is left in the process group. */
function isGroupGone(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
  }
  return processesInGroup(pgid).every(isGone);
}

function processesInGroup(pgid: number): number[] {
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        // Fields after the command name: state, ppid, pgrp.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return Number(fields[2]) === pgid;
      } catch {
        return false;
      }
    });
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
}

const bwrapPath = realSandboxHost.which('bwrap');
const hasBwrap = bwrapPath !== undefined && realSandboxHost.probeBwrap(bwrapPath) === undefined;

const managers: ExecSessionManager[] = [];
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.shutdown()));
});

function setup(options: Partial<ExecToolOptions> = {}, managerOptions: ExecSessionManagerOptions = {}) {
  const workspace = makeTempDir();
  const sessions = createExecSessionManager(managerOptions);
  managers.push(sessions);
  const policy = createPathPolicy({ workspace, restrictToWorkspace: true });
  const exec = createExecTool({ policy, sandbox: 'none', sessions, ...options });
  const writeStdin = createWriteStdinTool({ sessions });
  const listSessions = createListExecSessionsTool({ sessions });
  const ctx = makeContext({ sessionKey: 'telegram:1' });
  const run = (command: string, extra: Record<string, unknown> = {}, context: ToolContext = ctx) =>
    exec.execute({ command, ...extra }, context);
  const write = (args: Parameters<typeof writeStdin.execute>[0], context: ToolContext = ctx) =>
    writeStdin.execute(args, context);
  /** Starts a command in the background and returns its session id. */
  const background = async (command: string, extra: Record<string, unknown> = {}, context: ToolContext = ctx) => {
    const result = await run(command, { yield_time_ms: 100, ...extra }, context);
    const id = /session_id: (\w+)/.exec(textOf(result))?.[1];
    if (!id) throw new Error(`not backgrounded: ${textOf(result)}`);
    return id;
  };
  const pidOf = (id: string) => sessions.list('telegram:1').find((info) => info.id === id)?.pid as number;
  return { workspace, sessions, exec, run, write, background, pidOf, listSessions, ctx };
}

describe('exec yield_time_ms', () => {
  it('returns a finished command normally, without waiting out the yield time', async () => {
    const { run } = setup();
    // The longest yield (30 s) is past the test's timeout: waiting it out would fail the test.
    const result = await run('echo hi', { yield_time_ms: 30_000 });
    expect(result).toEqual({ content: 'hi\nExit code: 0' });
  });

  it('backgrounds a command still running, with the output so far and a session_id', async () => {
    const { run } = setup();
    const result = await run('echo starting; sleep 30', { yield_time_ms: 300 });
    const text = textOf(result);
    expect(result.isError).toBeFalsy();
    expect(text).toMatch(/^starting\nProcess running\. session_id: \w+\nElapsed: \d+\.\d s\n/);
    expect(text).toMatch(/write_stdin/);
  });

  it('is offered only when a session manager is given', () => {
    const workspace = makeTempDir();
    const plain = createExecTool({ policy: createPathPolicy({ workspace, restrictToWorkspace: true }) });
    expect(Object.keys(plain.parameters.shape)).not.toContain('yield_time_ms');
    expect(Object.keys(setup().exec.parameters.shape)).toContain('yield_time_ms');
  });
});

describe('write_stdin', () => {
  it('writes to cat, reads the echo, terminates it and leaves no process behind', async () => {
    const { background, write, pidOf } = setup();
    const id = await background('cat');
    const pid = pidOf(id);
    const echoed = await write({ session_id: id, chars: 'hello sessions\n', wait_for: 'hello sessions' });
    expect(textOf(echoed)).toMatch(/^hello sessions\nProcess running\. session_id: /);

    const stopped = await write({ session_id: id, terminate: true });
    expect(textOf(stopped)).toMatch(/Session terminated\.\nExit code: \d+/);
    await waitFor(() => isGone(pid) && isGroupGone(pid), 2000);
    expect(isGone(pid)).toBe(true);
    expect(isGroupGone(pid)).toBe(true);
    // A finished session is forgotten once read.
    expect(textOf(await write({ session_id: id }))).toMatch(/no exec session/);
  });

  it('kills grandchildren with the session (the whole process group)', async () => {
    const { workspace, background, write, pidOf } = setup();
    const id = await background('sleep 300 & echo $! > bg.pid; cat');
    const pid = pidOf(id);
    await waitFor(() => fs.existsSync(path.join(workspace, 'bg.pid')), 2000);
    const grandchild = Number(fs.readFileSync(path.join(workspace, 'bg.pid'), 'utf8'));
    await write({ session_id: id, terminate: true });
    await waitFor(() => isGone(grandchild) && isGroupGone(pid), 2000);
    expect(isGone(grandchild)).toBe(true);
    expect(isGroupGone(pid)).toBe(true);
  });

  it('drives an interactive python3 -i', async () => {
    const { background, write } = setup();
    const id = await background('python3 -i -u -q');
    const answer = await write({ session_id: id, chars: 'print(6 * 7)\n', wait_for: '42' });
    expect(textOf(answer)).toMatch(/^42\n/);
    const done = await write({ session_id: id, chars: 'exit(3)\n', yield_time_ms: 3000 });
    expect(textOf(done)).toMatch(/Exit code: 3/);
  });

  it('polls with empty chars, and close_stdin lets the command finish', async () => {
    const { background, write } = setup();
    const id = await background('cat; echo "cat done"');
    expect(textOf(await write({ session_id: id, chars: '', yield_time_ms: 50 }))).toMatch(/^\(no new output\)\n/);
    expect(textOf(await write({ session_id: id, chars: 'line one\n', wait_for: 'line one' }))).toMatch(/^line one\n/);
    const finished = await write({ session_id: id, close_stdin: true, yield_time_ms: 3000 });
    expect(textOf(finished)).toMatch(/^cat done\nExit code: 0\n/);
  });

  it('waits for a /regex/ and says when it was not seen in time', async () => {
    const { background, write } = setup();
    const id = await background('sleep 0.3; echo "ready on port 8123"; sleep 30');
    expect(textOf(await write({ session_id: id, wait_for: '/ready on port \\d+/' }))).toMatch(/^ready on port 8123\n/);
    const missed = await write({ session_id: id, wait_for: 'never printed', yield_time_ms: 100 });
    expect(textOf(missed)).toMatch(/\(wait_for text not seen yet\)\nProcess running/);
    expect(textOf(await write({ session_id: id, wait_for: '/(/' }))).toMatch(/not a valid regular expression/);
  });

  it('refuses terminate combined with input', async () => {
    const { background, write } = setup();
    const id = await background('cat');
    const result = await write({ session_id: id, chars: 'x', terminate: true });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/terminate must be used on its own/);
  });

  it('keeps sessions per chat: another chat can neither see nor use them', async () => {
    const { background, write, listSessions } = setup();
    const id = await background('cat');
    const other = makeContext({ sessionKey: 'discord:9' });
    expect(textOf(await write({ session_id: id, chars: 'x\n' }, other))).toMatch(/no exec session/);
    expect(textOf(await listSessions.execute({}, other))).toBe('No exec sessions.');
  });
});

describe('list_exec_sessions', () => {
  it('shows id, status, age, idle time, directory and command', async () => {
    const { workspace, background, listSessions, ctx } = setup();
    const id = await background('sleep 30');
    const text = textOf(await listSessions.execute({}, ctx));
    expect(text).toMatch(
      new RegExp(`^${id} \\| running \\| age \\d+ s \\| idle \\d+ s \\| cwd ${workspace} \\| sleep 30$`),
    );
  });
});

describe('session limits and cleanup', () => {
  it(`allows ${MAX_EXEC_SESSIONS} running sessions and refuses the next with a clear message`, async () => {
    const { background, run, sessions } = setup();
    for (let i = 0; i < MAX_EXEC_SESSIONS; i++) await background(`sleep 30 # ${i}`);
    const refused = await run('sleep 30', { yield_time_ms: 50 });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/8 background exec sessions are already running, the maximum/);
    const pids = sessions.list('telegram:1').map((info) => info.pid as number);
    await sessions.shutdown();
    await waitFor(() => pids.every(isGroupGone), 2000);
    expect(pids.filter((pid) => !isGroupGone(pid))).toEqual([]);
  });

  it('reaps sessions left idle', async () => {
    const { background, write, pidOf } = setup({}, { idleTimeoutMs: 100, reapIntervalMs: 25 });
    const id = await background('cat');
    const pid = pidOf(id);
    await waitFor(() => isGroupGone(pid), 3000);
    expect(isGroupGone(pid)).toBe(true);
    expect(textOf(await write({ session_id: id }))).toMatch(/no exec session.*idle minutes/);
  });

  it('kills a background session when the turn is cancelled', async () => {
    const { background, pidOf } = setup();
    const controller = new AbortController();
    const id = await background('sleep 30', {}, makeContext({ sessionKey: 'telegram:1', signal: controller.signal }));
    const pid = pidOf(id);
    controller.abort();
    await waitFor(() => isGroupGone(pid), 2000);
    expect(isGroupGone(pid)).toBe(true);
  });

  it('enforces an explicit timeout on a background session', async () => {
    const { background, write } = setup();
    const id = await background('sleep 30', { timeout: 1 });
    // Waits on the session itself (up to 30 s, past the test's timeout), not on a guess of when 1 s is up.
    const result = await write({ session_id: id, yield_time_ms: 30_000 });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/Command timed out; it and every process it started were killed\.\nExit code: 137/);
  });

  it('shutdown() kills every session and refuses new ones', async () => {
    const { background, sessions, run, pidOf } = setup();
    const first = pidOf(await background('cat'));
    const second = pidOf(await background('sleep 30'));
    await sessions.killAll();
    expect(isGroupGone(first) && isGroupGone(second)).toBe(true);
    expect(textOf(await run('sleep 1', { yield_time_ms: 10 }))).toMatch(/shutting down/);
  });

  it.skipIf(!hasBwrap)('runs sessions inside the sandbox too', async () => {
    const { background, write, pidOf } = setup({ sandbox: 'bwrap', sandboxNetwork: 'none' });
    const id = await background('hostname; cat');
    const pid = pidOf(id);
    const echoed = await write({ session_id: id, chars: 'boxed\n', wait_for: 'boxed' });
    expect(textOf(echoed)).toMatch(/^(nanobot-sandbox\n)?boxed\n/);
    await write({ session_id: id, terminate: true });
    await waitFor(() => isGroupGone(pid), 2000);
    expect(isGroupGone(pid)).toBe(true);
  });
});
