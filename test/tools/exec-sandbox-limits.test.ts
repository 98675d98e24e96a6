/**
 * Issue 15 items 7 and 8 inside the real sandbox: a fork bomb is contained by the process limit (the guard is
 * bypassed on purpose by running it from a script file), and when nanobot runs as root, commands run as an
 * unprivileged uid: root-only files outside the masked paths cannot be read, the workspace stays writable, and
 * what the command writes stays readable and editable on the host.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { buildBwrapArgs, realSandboxHost } from '../../src/security/sandbox.js';
import { chooseSandboxIdentity, handOverTree, type IdentityHost } from '../../src/security/sandbox-identity.js';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createExecTool, type ExecToolOptions } from '../../src/tools/exec.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

const bwrapPath = realSandboxHost.which('bwrap');
const hasBwrap = bwrapPath !== undefined && realSandboxHost.probeBwrap(bwrapPath) === undefined;
const isRoot = process.getuid?.() === 0;
const hasUtilLinux = realSandboxHost.which('prlimit') !== undefined && realSandboxHost.which('setpriv') !== undefined;

function setup(options: Partial<ExecToolOptions> = {}) {
  const root = makeTempDir('nanobot-limits-');
  const home = path.join(root, 'home');
  const dataDir = path.join(home, '.nanobot');
  const workspace = path.join(dataDir, 'workspace');
  fs.mkdirSync(workspace, { recursive: true });
  const tool = createExecTool({
    policy: createPathPolicy({ workspace, restrictToWorkspace: false, homeDir: home }),
    sandbox: 'bwrap',
    sandboxNetwork: 'none',
    dataDir,
    parentEnv: { HOME: home, PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' },
    ...options,
  });
  const run = (command: string, timeout?: number) =>
    tool.execute({ command, ...(timeout === undefined ? {} : { timeout }) }, makeContext());
  return { workspace, run };
}

describe('sandbox resource limits', () => {
  it.skipIf(!hasBwrap || !hasUtilLinux)('applies a process and a memory limit inside the sandbox', async () => {
    const { run } = setup({ sandboxLimits: { processes: 64, dataBytes: 512 * 1024 ** 2 } });
    const result = await run("grep -E '^Max (processes|data size|core file size)' /proc/self/limits");
    const text = textOf(result);
    expect(text).toMatch(/Max data size\s+536870912\s+536870912\s+bytes/);
    expect(text).toMatch(/Max core file size\s+0\s+0\s+bytes/);
    const processes = /Max processes\s+(\d+)\s+(\d+)/.exec(text);
    expect(processes, text).not.toBeNull();
    expect(Number(processes?.[1])).toBeGreaterThanOrEqual(64);
  });

  it.skipIf(!hasBwrap || !hasUtilLinux)(
    'contains a real fork bomb: the command fails, and the next command still runs',
    async () => {
      const { workspace, run } = setup({ sandboxLimits: { processes: 64 } });
      // A script file: the guard cannot see inside it, so this is the sandbox holding on its own.
      fs.writeFileSync(path.join(workspace, 'bomb.sh'), 'bomb() { bomb | bomb; }\nbomb\n');
      const bomb = await run('bash bomb.sh', 45);
      expect(bomb.isError === true || !/Exit code: 0$/.test(textOf(bomb)), textOf(bomb)).toBe(true);
      expect(textOf(bomb)).toMatch(/fork|Resource temporarily unavailable|timed out/);
      const after = await run('echo alive');
      expect(after.content).toBe('alive\nExit code: 0');
    },
    120_000,
  );
});

describe('running as root: commands run as an unprivileged uid', () => {
  it.skipIf(!hasBwrap || !isRoot || !hasUtilLinux)(
    'cannot read a 0600 root file outside the masked paths; the workspace stays writable and host-editable',
    async () => {
      // Outside every masked path (/home, /root, /run, /tmp, /var/tmp); only root can create it.
      const secretDir = fs.mkdtempSync('/var/lib/nanobot-secret-');
      onTestFinished(() => fs.rmSync(secretDir, { recursive: true, force: true }));
      const secret = path.join(secretDir, 'token');
      fs.writeFileSync(secret, 'root-only-secret\n', { mode: 0o600 });
      fs.chmodSync(secretDir, 0o755);
      const { workspace, run } = setup();
      fs.writeFileSync(path.join(workspace, 'existing.txt'), 'old\n');
      const result = await run(`cat ${secret}; id -u; echo made > new.txt && echo more >> existing.txt && echo wrote`);
      const text = textOf(result);
      expect(text).not.toContain('root-only-secret');
      expect(text).toMatch(/Permission denied/);
      expect(text).toMatch(/^\d+$/m);
      expect(text).not.toMatch(/^0$/m);
      expect(text).toMatch(/wrote/);
      // Host-side code (root) reads and edits what the command wrote.
      expect(fs.readFileSync(path.join(workspace, 'new.txt'), 'utf8')).toBe('made\n');
      expect(fs.readFileSync(path.join(workspace, 'existing.txt'), 'utf8')).toBe('old\nmore\n');
      fs.appendFileSync(path.join(workspace, 'new.txt'), 'edited by the user\n');
      const again = await run('cat new.txt && rm new.txt && echo removed');
      expect(again.content).toBe('made\nedited by the user\nremoved\nExit code: 0');
    },
  );

  it.skipIf(!hasBwrap || !isRoot || !hasUtilLinux)('has no capabilities left after the switch', async () => {
    const { run } = setup();
    const result = await run(
      "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status; grep NoNewPrivs /proc/self/status",
    );
    expect(textOf(result)).toBe(
      [
        'CapInh:\t0000000000000000',
        'CapPrm:\t0000000000000000',
        'CapEff:\t0000000000000000',
        'CapBnd:\t0000000000000000',
        'CapAmb:\t0000000000000000',
        'NoNewPrivs:\t1',
        'Exit code: 0',
      ].join('\n'),
    );
  });
});

describe('handOverTree', () => {
  it.skipIf(!isRoot)('gives root-owned entries to the uid, but never a symlink target or a hard-linked file', () => {
    const root = makeTempDir('nanobot-handover-');
    const ws = path.join(root, 'ws');
    const outside = path.join(root, 'outside.txt');
    fs.mkdirSync(path.join(ws, 'sub'), { recursive: true });
    fs.writeFileSync(path.join(ws, 'sub', 'a.txt'), 'a');
    fs.writeFileSync(outside, 'host file');
    fs.symlinkSync(outside, path.join(ws, 'link'));
    fs.linkSync(outside, path.join(ws, 'hard'));
    fs.writeFileSync(path.join(ws, 'theirs.txt'), 'x');
    fs.chownSync(path.join(ws, 'theirs.txt'), 1234, 1234);

    expect(handOverTree(ws, 65534, 65534)).toBeUndefined();
    const owner = (p: string) => fs.lstatSync(p).uid;
    expect([ws, path.join(ws, 'sub'), path.join(ws, 'sub', 'a.txt'), path.join(ws, 'link')].map(owner)).toEqual([
      65534, 65534, 65534, 65534,
    ]);
    expect(owner(outside)).toBe(0);
    expect(owner(path.join(ws, 'theirs.txt'))).toBe(1234);
  });
});

describe('chooseSandboxIdentity', () => {
  const layout = { workspace: '/srv/bot/ws', homeDir: '/root', dataDir: '/root/.nanobot' };
  const host = (overrides: Partial<IdentityHost> = {}): IdentityHost & { handedOver: string[] } => {
    const handedOver: string[] = [];
    return {
      handedOver,
      uid: () => 0,
      which: (program) => `/usr/bin/${program}`,
      ownerOf: () => ({ uid: 0, gid: 0 }),
      handOver: (dir) => {
        handedOver.push(dir);
        return undefined;
      },
      ...overrides,
    };
  };

  it('keeps the uid of a non-root nanobot', () => {
    expect(chooseSandboxIdentity(layout, host({ uid: () => 1000 }))).toEqual({});
  });

  it('runs as the workspace owner when that is not root', () => {
    const fake = host({ ownerOf: () => ({ uid: 1000, gid: 100 }) });
    expect(chooseSandboxIdentity(layout, fake)).toEqual({
      identity: { uid: 1000, gid: 100, setpriv: '/usr/bin/setpriv' },
    });
    expect(fake.handedOver).toEqual([]);
  });

  it('hands a root-owned workspace to uid 65534', () => {
    const fake = host();
    expect(chooseSandboxIdentity(layout, fake).identity).toMatchObject({ uid: 65534, gid: 65534 });
    expect(fake.handedOver).toEqual(['/srv/bot/ws']);
  });

  it('never hands over a workspace that holds the home or data dir', () => {
    for (const workspace of ['/root', '/', '/root/..']) {
      const fake = host();
      const choice = chooseSandboxIdentity({ ...layout, workspace }, fake);
      expect(choice.identity).toBeUndefined();
      expect(choice.note).toMatch(/not handed/);
      expect(fake.handedOver).toEqual([]);
    }
  });

  it('says so when setpriv is missing', () => {
    expect(chooseSandboxIdentity(layout, host({ which: () => undefined })).note).toMatch(/setpriv/);
  });

  it('puts setpriv, then prlimit, before the command', () => {
    const args = buildBwrapArgs({
      plan: {
        network: 'none',
        layout: { ...layout, readOnlyDirs: [], roBinds: [], rwBinds: [] },
        identity: { uid: 65534, gid: 65534, setpriv: '/usr/bin/setpriv' },
        prlimit: '/usr/bin/prlimit',
        limits: { processes: 100, dataBytes: 1024 },
      },
      nprocBase: 5,
      cwd: '/srv/bot/ws',
      command: ['/bin/bash', '-c', 'ls'],
      exists: () => true,
    });
    expect(args.slice(args.indexOf('--chdir'))).toEqual([
      ...['--chdir', '/srv/bot/ws', '--'],
      ...['/usr/bin/setpriv', '--reuid', '65534', '--regid', '65534', '--clear-groups', '--inh-caps=-all'],
      ...['--bounding-set=-all', '--', '/usr/bin/prlimit', '--core=0', '--nproc=105', '--data=1024', '--'],
      ...['/bin/bash', '-c', 'ls'],
    ]);
  });
});
