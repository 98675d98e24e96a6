import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNetworkPolicy } from '../../src/security/network.js';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createExecTool, type ExecToolOptions } from '../../src/tools/exec.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { eventually } from '../helpers/eventually.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

function setup(options: Partial<ExecToolOptions> = {}, restrictToWorkspace = true) {
  const workspace = makeTempDir();
  const policy = createPathPolicy({ workspace, restrictToWorkspace });
  // The sandboxed paths are covered in exec-sandbox.test.ts; here pids and paths are the host's.
  const tool = createExecTool({ policy, sandbox: 'none', ...options });
  const run = (command: string, extra: Partial<Parameters<typeof tool.execute>[0]> = {}, ctx = makeContext()) =>
    tool.execute({ command, ...extra }, ctx);
  return { workspace, tool, run };
}

/** Alive and not a zombie (in containers PID 1 may never reap the killed orphan). */
const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = fs.readFileSync(`/proc/${pid}/stat`, { encoding: 'utf8', flag: 'r' });
  return !/^\d+ \(.*\) Z/.test(stat);
};

describe('exec output', () => {
  it('returns stdout then the exit code', async () => {
    const { run } = setup();
    const result = await run('echo hello');
    expect(result).toEqual({ content: 'hello\nExit code: 0' });
  });

  it('adds STDERR and treats a non-zero exit as a normal result', async () => {
    const { run } = setup();
    const result = await run('echo out; echo oops >&2; exit 3');
    expect(result.isError).toBeFalsy();
    expect(result.content).toBe('out\nSTDERR:\noops\nExit code: 3');
  });

  it('says when there was no output', async () => {
    const { run } = setup();
    expect((await run('true')).content).toBe('(no output)\nExit code: 0');
  });

  it('runs in the workspace by default and in working_dir when given', async () => {
    const { workspace, run } = setup();
    fs.mkdirSync(path.join(workspace, 'sub'));
    expect((await run('pwd')).content).toBe(`${workspace}\nExit code: 0`);
    expect((await run('pwd', { working_dir: 'sub' })).content).toBe(`${path.join(workspace, 'sub')}\nExit code: 0`);
  });

  it('cuts the middle of long output, keeping the start and the exit code', async () => {
    const { run } = setup();
    const text = textOf(await run('seq 1 20000', { max_output_chars: 1000 }));
    expect(text.startsWith('1\n2\n3\n')).toBe(true);
    expect(text.endsWith('19999\n20000\nExit code: 0')).toBe(true);
    expect(text).toMatch(/\d+ characters omitted from the middle of the output/);
    expect(text.length).toBeLessThan(1300);
  });
});

describe('exec environment', () => {
  const saved = process.env.OPENAI_API_KEY;
  afterEach(() => {
    if (saved === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = saved;
    delete process.env.NANOBOT_TEST_ALLOWED;
  });

  it('does not pass the parent’s secrets to the command', async () => {
    process.env.OPENAI_API_KEY = 'sk-test-secret-123';
    const { run } = setup();
    const text = textOf(await run('env'));
    expect(text).not.toContain('sk-test-secret-123');
    expect(text).not.toContain('OPENAI_API_KEY');
    const names = text
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => line.split('=')[0]);
    // Shells add a few of their own (PWD, SHLVL, _); nothing else may come from the parent.
    for (const name of names) expect(['HOME', 'LANG', 'TERM', 'PATH', 'PWD', 'OLDPWD', 'SHLVL', '_']).toContain(name);
  });

  it('passes allowedEnvKeys and extends PATH', async () => {
    process.env.NANOBOT_TEST_ALLOWED = 'visible';
    const { run } = setup({
      allowedEnvKeys: ['NANOBOT_TEST_ALLOWED'],
      pathPrepend: '/opt/first',
      pathAppend: '/opt/last',
    });
    const text = textOf(await run('echo "$NANOBOT_TEST_ALLOWED"; echo "$PATH"'));
    expect(text).toMatch(/^visible\n\/opt\/first:.*:\/opt\/last\n/);
  });
});

describe('exec limits', () => {
  it('kills the whole process group on timeout', async () => {
    const { workspace, run } = setup();
    // The command sleeps 30 s, past the test's timeout: getting a result at all means the 1 s timeout ended it.
    const result = await run('sleep 30 & echo $! > child.pid; sleep 30', { timeout: 1 });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^Error: Command timed out after 1 s/);
    const childPid = Number(fs.readFileSync(path.join(workspace, 'child.pid'), 'utf8'));
    await eventually(() => !isAlive(childPid));
  });

  it('stops when the turn is aborted', async () => {
    const { workspace, run } = setup();
    const controller = new AbortController();
    // Aborted once the command is running (a gate on its own output), not after a guessed delay.
    const started = path.join(workspace, 'started');
    void eventually(() => fs.existsSync(started)).then(() => controller.abort());
    // 30 s is past the test's timeout: a result means the abort stopped it.
    const result = await run('touch started; sleep 30', {}, makeContext({ signal: controller.signal }));
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/cancelled/);
  });

  it('does not hang on a background process that keeps the output pipe open', async () => {
    const { workspace, run } = setup();
    // The background sleep outlives the test's timeout: waiting for the pipe to close would fail the test.
    const result = await run('sleep 60 & echo $! > bg.pid; echo started');
    expect(result.content).toBe('started\nExit code: 0');
    process.kill(Number(fs.readFileSync(path.join(workspace, 'bg.pid'), 'utf8')), 'SIGKILL');
  });
});

describe('exec guard', () => {
  it('blocks writes to history.jsonl before running anything', async () => {
    const { workspace, run } = setup();
    fs.mkdirSync(path.join(workspace, 'memory'));
    const result = await run('echo hacked >> memory/history.jsonl');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/Command blocked by safety guard: write to history\.jsonl/);
    expect(fs.existsSync(path.join(workspace, 'memory/history.jsonl'))).toBe(false);
  });

  it('blocks a command that names the cloud metadata address', async () => {
    const { run } = setup({}, false);
    const result = await run('curl -s http://169.254.169.254/latest/meta-data/ > creds.txt');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/169\.254\.169\.254/);
  });

  it('blocks loopback URLs in commands unless the whitelist allows them', async () => {
    const { run } = setup({}, false);
    expect((await run('curl http://127.0.0.1:8080/admin')).isError).toBe(true);
    const allowed = setup({ network: createNetworkPolicy({ whitelist: ['127.0.0.0/8'] }) }, false);
    const result = await allowed.run('echo http://127.0.0.1:8080/admin');
    expect(result.isError).toBeFalsy();
  });

  it('blocks a standalone format command', async () => {
    const { run } = setup({}, false);
    const result = await run('format c:');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/format/);
  });

  it('blocks a working_dir outside the workspace', async () => {
    const { run } = setup();
    const outside = makeTempDir();
    const result = await run('ls', { working_dir: outside });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/working_dir rejected: .*outside the workspace/);
  });

  it('allows rm with stderr sent to /dev/null', async () => {
    const { workspace, run } = setup();
    fs.writeFileSync(path.join(workspace, 'foo'), 'x');
    const result = await run('rm foo 2>/dev/null');
    expect(result.content).toBe('(no output)\nExit code: 0');
    expect(fs.existsSync(path.join(workspace, 'foo'))).toBe(false);
  });

  it('blocks a chained segment that is not in the allowlist', async () => {
    const { workspace, run } = setup({ allowPatterns: ['ls( .*)?'] });
    const result = await run('ls && touch pwned');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/allowlist.*touch pwned/);
    expect(fs.existsSync(path.join(workspace, 'pwned'))).toBe(false);
  });

  it('blocks ~/ paths outside the workspace', async () => {
    const { run } = setup();
    const result = await run('cat ~/.bashrc');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/outside the workspace/);
  });

  it('accepts cmd as an alias for command through the registry', async () => {
    const { tool } = setup();
    const registry = new ToolRegistry();
    registry.register(tool);
    const result = await registry.execute(
      { id: '1', type: 'function', function: { name: 'exec', arguments: '{"cmd":"echo via-alias"}' } },
      makeContext(),
    );
    expect(result.content).toBe('via-alias\nExit code: 0');
  });

  it('reports a missing working_dir instead of a confusing spawn error', async () => {
    const { run } = setup();
    const result = await run('ls', { working_dir: 'nope' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/does not exist/);
  });
});
