/**
 * exec inside the real bubblewrap sandbox. Skipped only where bwrap is not installed (CI installs it).
 * Destructive commands run only after the sandbox has proved itself from the inside, and their victims
 * are temp copies wherever possible.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNetworkPolicy } from '../../src/security/network.js';
import { buildBwrapArgs, realSandboxHost, resolveSandbox } from '../../src/security/sandbox.js';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createExecTool, type ExecToolOptions } from '../../src/tools/exec.js';
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

/** Host pids whose command line is exactly `argv`. */
function findProcesses(argv: string[]): number[] {
  const wanted = `${argv.join('\0')}\0`;
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return fs.readFileSync(`/proc/${name}/cmdline`, 'utf8') === wanted;
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
}

const bwrapPath = realSandboxHost.which('bwrap');
const hasBwrap = bwrapPath !== undefined && realSandboxHost.probeBwrap(bwrapPath) === undefined;
const hasUserNet = hasBwrap && realSandboxHost.which('slirp4netns') !== undefined && realSandboxHost.tunUsable();

/** A fake home with a nanobot data dir holding a secret config, and the workspace inside it (nanobot's layout). */
function setup(options: Partial<ExecToolOptions> = {}) {
  const root = makeTempDir('nanobot-sandbox-');
  const home = path.join(root, 'home');
  const dataDir = path.join(home, '.nanobot');
  const workspace = path.join(dataDir, 'workspace');
  fs.mkdirSync(workspace, { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'config.json'), '{"providers":{"openai":{"apiKey":"sk-sandbox-secret"}}}');
  fs.writeFileSync(path.join(home, '.bash_history'), 'export TOKEN=home-secret\n');
  const policy = createPathPolicy({ workspace, restrictToWorkspace: false, homeDir: home });
  const tool = createExecTool({
    policy,
    sandbox: 'bwrap',
    sandboxNetwork: 'none',
    dataDir,
    parentEnv: { HOME: home, PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' },
    ...options,
  });
  const run = (command: string, extra: Partial<Parameters<typeof tool.execute>[0]> = {}) =>
    tool.execute({ command, ...extra }, makeContext());
  return { root, home, dataDir, workspace, run };
}

/** Exits with an error unless it is inside the sandbox: our hostname, and /usr refuses writes with EROFS. */
const PROVE_SANDBOX = [
  'import errno, os, shutil, socket, sys',
  "if socket.gethostname() != 'nanobot-sandbox': sys.exit('NOT IN THE SANDBOX')",
  'try:',
  "    open('/usr/nanobot-sandbox-probe', 'w')",
  "    sys.exit('USR IS WRITABLE')",
  'except OSError as e:',
  "    if e.errno != errno.EROFS: sys.exit('unexpected: %s' % e)",
].join('\n');

const python = (script: string) => `python3 - <<'PY'\n${script}\nPY`;

describe('exec sandbox (bubblewrap)', () => {
  it.skipIf(!hasBwrap)('is active: /usr is read-only and the host name is the sandbox’s', async () => {
    const { run } = setup();
    const result = await run('touch /usr/nanobot-sandbox-probe; hostname');
    expect(textOf(result)).toMatch(/Read-only file system/);
    expect(textOf(result)).toMatch(/nanobot-sandbox/);
    expect(fs.existsSync('/usr/nanobot-sandbox-probe')).toBe(false);
  });

  it.skipIf(!hasBwrap)('has no capabilities and cannot write sysctls, even as root', async () => {
    const { run } = setup();
    // `test -w` only asks; writing core_pattern for real would change the host.
    const result = await run(
      'grep CapEff /proc/self/status; test -w /proc/sys/kernel/core_pattern && echo SYSCTL-WRITABLE; ' +
        'mount -o remount,bind,rw / 2>/dev/null && echo REMOUNTED; true',
    );
    expect(result.content).toBe('CapEff:\t0000000000000000\nExit code: 0');
  });

  it.skipIf(!hasBwrap)('shutil.rmtree("/etc") fails and /etc is untouched', async () => {
    const { run } = setup();
    const before = fs.readdirSync('/etc').length;
    const result = await run(python(`${PROVE_SANDBOX}\nshutil.rmtree('/etc')`));
    const text = textOf(result);
    expect(text).not.toMatch(/NOT IN THE SANDBOX|USR IS WRITABLE|unexpected/);
    expect(text).toMatch(/Read-only file system/);
    expect(text).toMatch(/Exit code: 1/);
    expect(fs.readdirSync('/etc').length).toBe(before);
    expect(fs.existsSync('/etc/passwd')).toBe(true);
  });

  it.skipIf(!hasBwrap)('cannot see or delete a host /tmp directory outside the workspace', async () => {
    const { run } = setup();
    const victim = makeTempDir('nanobot-victim-');
    fs.writeFileSync(path.join(victim, 'keep.txt'), 'precious');
    const result = await run(python(`${PROVE_SANDBOX}\nshutil.rmtree(${JSON.stringify(victim)})`));
    expect(textOf(result)).toMatch(/FileNotFoundError/);
    expect(fs.readFileSync(path.join(victim, 'keep.txt'), 'utf8')).toBe('precious');
  });

  it.skipIf(!hasBwrap)('writes to the workspace reach the host; /tmp is private and writable', async () => {
    const { workspace, run } = setup();
    fs.mkdirSync(path.join(workspace, 'sub'));
    // A name of its own: the host's /tmp may hold anything, even a directory called x.
    const scratch = `/tmp/nanobot-private-${process.pid}-${Date.now()}`;
    const result = await run(`echo built > out.txt && echo scratch > ${scratch} && cat ${scratch} && pwd`, {
      working_dir: 'sub',
    });
    expect(result.content).toBe(`scratch\n${path.join(workspace, 'sub')}\nExit code: 0`);
    expect(fs.readFileSync(path.join(workspace, 'sub', 'out.txt'), 'utf8')).toBe('built\n');
    expect(fs.existsSync(scratch)).toBe(false);
  });

  it.skipIf(!hasBwrap)('hides config.json in the data dir and the rest of the home dir', async () => {
    const { home, dataDir, run } = setup();
    const result = await run(`cat ${dataDir}/config.json; ls -A ${home}; cat ${home}/.bash_history; ls ${dataDir}`);
    const text = textOf(result);
    expect(text).not.toContain('sk-sandbox-secret');
    expect(text).not.toContain('home-secret');
    expect(text).toMatch(/config\.json: No such file or directory/);
    // Only the path down to the workspace exists in the home dir.
    expect(text.split('\n').slice(0, 2)).toEqual(['.nanobot', 'workspace']);
  });

  it.skipIf(!hasBwrap)('says how to reach programs installed under the hidden home', async () => {
    const { home, run } = setup();
    fs.mkdirSync(path.join(home, 'bin'));
    fs.writeFileSync(path.join(home, 'bin', 'mytool'), '#!/bin/sh\necho tool-ran\n', { mode: 0o755 });
    const hidden = await run(`${home}/bin/mytool`);
    expect(textOf(hidden)).toMatch(/Exit code: 127\n\(In the sandbox the home directory is hidden.*sandboxRoBinds/);
    const { run: runWithBind } = setup({ sandboxRoBinds: [`${home}/bin`] });
    expect((await runWithBind(`${home}/bin/mytool`)).content).toBe('tool-ran\nExit code: 0');
  });

  it.skipIf(!hasBwrap)('refuses a working_dir the sandbox hides', async () => {
    const { home, run } = setup();
    fs.mkdirSync(path.join(home, 'projects'));
    const result = await run('ls', { working_dir: path.join(home, 'projects') });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/hidden inside the sandbox/);
  });

  describe('network', () => {
    let server: http.Server | undefined;
    afterEach(() => server?.close());

    const listen = async (host: string) => {
      server = http.createServer((_req, res) => res.end('host-service-secret'));
      await new Promise<void>((resolve) => server?.listen(0, host, resolve));
      return (server.address() as AddressInfo).port;
    };
    const fetchScript = (url: string) =>
      python(
        `import urllib.request\ntry:\n    print(urllib.request.urlopen(${JSON.stringify(url)}, timeout=2).read().decode())\n` +
          'except Exception as e:\n    print("unreachable:", type(e).__name__)',
      );

    const cannotReachHostLoopback = (network: 'none' | 'user') => async () => {
      const port = await listen('127.0.0.1');
      // The command-URL guard is told to let these through, so what is tested is the sandbox's own isolation.
      const trusting = createNetworkPolicy({ whitelist: ['127.0.0.0/8', '10.0.0.0/8'] });
      const { run } = setup({ sandboxNetwork: network, network: trusting });
      // 10.0.2.2 is slirp4netns's gateway, which maps to the host loopback unless disabled.
      const result = await run(
        `${fetchScript(`http://127.0.0.1:${port}/`)}\n${fetchScript(`http://10.0.2.2:${port}/`)}`,
      );
      expect(textOf(result)).not.toContain('host-service-secret');
      expect(textOf(result)).toMatch(/unreachable: \w+\nunreachable: \w+\nExit code: 0/);
    };
    it.skipIf(!hasBwrap)('none: cannot reach a service on the host loopback', cannotReachHostLoopback('none'));
    it.skipIf(!hasUserNet)('user: cannot reach a service on the host loopback', cannotReachHostLoopback('user'));
  });

  it.skipIf(!hasBwrap)('reports a broken user-mode network instead of running without one', async () => {
    const { run } = setup({
      sandboxNetwork: 'user',
      sandboxHost: {
        ...realSandboxHost,
        which: (program) => (program === 'slirp4netns' ? '/bin/false' : realSandboxHost.which(program)),
        tunUsable: () => true,
      },
    });
    const result = await run('echo should-not-run');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/sandbox network setup failed: slirp4netns failed: exited with code 1/);
    expect(textOf(result)).toMatch(/sandboxNetwork to "none"/);
    expect(textOf(result)).not.toMatch(/should-not-run/);
  });

  it.skipIf(!hasBwrap)('kills everything inside on timeout', async () => {
    const { run } = setup();
    const marker = '4242.125';
    // The sleeps outlive the test's timeout: a result at all means the 1 s timeout ended them.
    const result = await run(`sleep ${marker} & sleep ${marker}`, { timeout: 1 });
    expect(textOf(result)).toMatch(/timed out after 1 s/);
    await waitFor(() => findProcesses(['sleep', marker]).every(isGone), 2000);
    expect(findProcesses(['sleep', marker]).filter((pid) => !isGone(pid))).toEqual([]);
  });

  it.skipIf(!hasBwrap)('dies with its parent process', async () => {
    const { workspace, home, dataDir } = setup();
    const marker = '4242.375';
    const box = resolveSandbox(
      { sandbox: 'bwrap', sandboxNetwork: 'none' },
      { workspace, homeDir: home, dataDir, readOnlyDirs: [], roBinds: [], rwBinds: [] },
    );
    if (box.kind !== 'bwrap') throw new Error(`no sandbox: ${JSON.stringify(box)}`);
    const args = buildBwrapArgs({ plan: box.plan, cwd: workspace, command: ['/bin/sh', '-c', `sleep ${marker}`] });
    // The parent: a python process that starts the sandbox and then waits; we SIGKILL it.
    const parent = spawn(
      'python3',
      ['-c', 'import subprocess,sys,time; subprocess.Popen(sys.argv[1:]); time.sleep(60)', box.plan.bwrap, ...args],
      {
        stdio: 'ignore',
      },
    );
    await waitFor(() => findProcesses(['sleep', marker]).length > 0, 3000);
    const inside = findProcesses(['sleep', marker]);
    expect(inside.length).toBe(1);
    parent.kill('SIGKILL');
    await waitFor(() => inside.every(isGone), 3000);
    expect(inside.filter((pid) => !isGone(pid))).toEqual([]);
  });
});

describe('exec sandbox configuration', () => {
  it('"bwrap" without bubblewrap installed fails with a clear message', async () => {
    const workspace = makeTempDir();
    const tool = createExecTool({
      policy: createPathPolicy({ workspace, restrictToWorkspace: true }),
      sandbox: 'bwrap',
      sandboxHost: { ...realSandboxHost, which: () => undefined },
    });
    const result = await tool.execute({ command: 'echo hi' }, makeContext());
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/sandbox is "bwrap" but bubblewrap \(bwrap\) is not installed/);
    expect(textOf(result)).toMatch(/apt-get install bubblewrap.*or set tools\.exec\.sandbox to "none"/);
  });

  it('tells the model about the sandbox and its network in the description', () => {
    const workspace = makeTempDir();
    const policy = createPathPolicy({ workspace, restrictToWorkspace: true });
    const boxed = createExecTool({
      policy,
      sandboxHost: {
        ...realSandboxHost,
        which: (program) => (program === 'bwrap' ? '/usr/bin/bwrap' : undefined),
        probeBwrap: () => undefined,
      },
    });
    expect(boxed.description).toMatch(
      /Commands run in a sandbox: only the workspace is writable.*there is no network\.$/,
    );
    const plain = createExecTool({ policy, sandbox: 'none' });
    expect(plain.description).not.toMatch(/sandbox/);
  });

  it('auto without bubblewrap runs the command unsandboxed', async () => {
    const workspace = makeTempDir();
    const tool = createExecTool({
      policy: createPathPolicy({ workspace, restrictToWorkspace: true }),
      sandboxHost: { ...realSandboxHost, which: () => undefined },
    });
    expect((await tool.execute({ command: 'echo hi' }, makeContext())).content).toBe('hi\nExit code: 0');
  });
});
