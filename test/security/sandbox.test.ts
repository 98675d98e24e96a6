/** The bwrap argument list and sandbox resolution, as pure functions (no bwrap needed). */
import { describe, expect, it } from 'vitest';
import {
  type BwrapArgsInput,
  buildBwrapArgs,
  isVisibleInSandbox,
  planSandboxMounts,
  resolveSandbox,
  type SandboxHost,
  type SandboxLayout,
} from '../../src/security/sandbox.js';

const HOME = '/home/alice';
const DATA = '/home/alice/.nanobot';
const WS = '/home/alice/.nanobot/workspace';

function layout(overrides: Partial<SandboxLayout> = {}): SandboxLayout {
  return {
    workspace: WS,
    homeDir: HOME,
    dataDir: DATA,
    readOnlyDirs: [`${DATA}/media`],
    roBinds: [],
    rwBinds: [],
    ...overrides,
  };
}

const everythingExists = () => true;

function args(overrides: Partial<SandboxLayout> = {}, input: Partial<BwrapArgsInput> = {}): string[] {
  return buildBwrapArgs({
    plan: { network: 'none', layout: layout(overrides) },
    cwd: WS,
    command: ['/bin/bash', '-c', 'ls'],
    exists: everythingExists,
    ...input,
  });
}

/** [flag, a, b] triples and [flag, a] pairs as strings, for order checks. */
const indexOf = (list: string[], ...sequence: string[]) =>
  list.findIndex((_, i) => sequence.every((item, j) => list[i + j] === item));

describe('buildBwrapArgs', () => {
  it('test_parent_dir_masked_with_tmpfs: hides the workspace parent, then binds the workspace back', () => {
    const list = args({ homeDir: '/srv/home', dataDir: '/srv/home/.nanobot', workspace: '/data/bots/ws' });
    const mask = indexOf(list, '--tmpfs', '/data/bots');
    const bind = indexOf(list, '--bind', '/data/bots/ws', '/data/bots/ws');
    expect(mask).toBeGreaterThan(-1);
    expect(bind).toBeGreaterThan(mask);
    expect(list.indexOf('--chdir')).toBeGreaterThan(bind);
  });

  it('makes the root read-only with private /tmp, fresh /proc and a minimal /dev', () => {
    const list = args();
    expect(indexOf(list, '--ro-bind', '/', '/')).toBeGreaterThan(-1);
    expect(indexOf(list, '--tmpfs', '/tmp')).toBeGreaterThan(-1);
    expect(indexOf(list, '--proc', '/proc')).toBeGreaterThan(-1);
    expect(indexOf(list, '--dev', '/dev')).toBeGreaterThan(-1);
    // uid 0 could otherwise write sysctls such as core_pattern.
    expect(indexOf(list, '--ro-bind', '/proc/sys', '/proc/sys')).toBeGreaterThan(indexOf(list, '--proc', '/proc'));
  });

  it('drops capabilities and unshares pid, ipc and uts, dying with its parent', () => {
    const list = args();
    for (const flag of ['--die-with-parent', '--new-session', '--unshare-pid', '--unshare-ipc', '--unshare-uts']) {
      expect(list).toContain(flag);
    }
    expect(indexOf(list, '--cap-drop', 'ALL')).toBeGreaterThan(-1);
  });

  it('hides the home dir and the data dir holding config.json, and /run with its sockets', () => {
    const list = args({ workspace: '/work/project' });
    for (const hidden of ['/home', '/root', '/run']) expect(indexOf(list, '--tmpfs', hidden)).toBeGreaterThan(-1);
    // Home lives under /home, so one mask covers both it and the data dir.
    expect(indexOf(list, '--tmpfs', HOME)).toBe(-1);
    const custom = args({ homeDir: '/opt/me', dataDir: '/var/lib/nanobot', workspace: '/work/project' });
    expect(indexOf(custom, '--tmpfs', '/opt/me')).toBeGreaterThan(-1);
    expect(indexOf(custom, '--tmpfs', '/var/lib/nanobot')).toBeGreaterThan(-1);
  });

  it('shows the media dir read-only and the workspace read-write', () => {
    const list = args();
    expect(indexOf(list, '--ro-bind-try', `${DATA}/media`, `${DATA}/media`)).toBeGreaterThan(-1);
    expect(indexOf(list, '--bind', WS, WS)).toBeGreaterThan(-1);
  });

  it('honours sandboxRoBinds and sandboxRwBinds, expanding ~ and skipping relative paths', () => {
    const list = args({ roBinds: ['~/.local/bin', 'relative/bin'], rwBinds: ['/var/cache/pip', ''] });
    expect(indexOf(list, '--ro-bind-try', `${HOME}/.local/bin`, `${HOME}/.local/bin`)).toBeGreaterThan(-1);
    expect(indexOf(list, '--bind-try', '/var/cache/pip', '/var/cache/pip')).toBeGreaterThan(-1);
    expect(list).not.toContain('relative/bin');
  });

  it('ignores binds that would uncover the workspace parent or the data dir', () => {
    const list = args({ roBinds: [HOME, '/home'], rwBinds: [DATA] });
    expect(indexOf(list, '--ro-bind-try', HOME, HOME)).toBe(-1);
    expect(indexOf(list, '--ro-bind-try', '/home', '/home')).toBe(-1);
    expect(indexOf(list, '--bind-try', DATA, DATA)).toBe(-1);
  });

  it('hides the data dir again when the workspace is the home dir', () => {
    const list = args({ workspace: HOME });
    const bind = indexOf(list, '--bind', HOME, HOME);
    const lateMask = list.findIndex((item, i) => item === '--tmpfs' && list[i + 1] === DATA && i > bind);
    expect(bind).toBeGreaterThan(-1);
    expect(lateMask).toBeGreaterThan(bind);
    // The media dir inside it is re-shown on top.
    expect(list.lastIndexOf(`${DATA}/media`)).toBeGreaterThan(lateMask);
  });

  it('hides config.json when the workspace is the data dir itself', () => {
    const list = args({ workspace: DATA });
    expect(indexOf(list, '--ro-bind', '/dev/null', `${DATA}/config.json`)).toBeGreaterThan(
      indexOf(list, '--bind', DATA, DATA),
    );
  });

  it('unshares the network unless it is host', () => {
    expect(args()).toContain('--unshare-net');
    const host = buildBwrapArgs({
      plan: { network: 'host', layout: layout() },
      cwd: WS,
      command: ['true'],
      exists: everythingExists,
    });
    expect(host).not.toContain('--unshare-net');
  });

  it('adds the sync fds for user networking and ends with the command', () => {
    const list = args({}, { syncFds: { info: 3, block: 4 }, command: ['/bin/sh', '-c', "echo 'a b'"] });
    expect(indexOf(list, '--info-fd', '3', '--block-fd', '4')).toBeGreaterThan(-1);
    expect(list.slice(list.indexOf('--'))).toEqual(['--', '/bin/sh', '-c', "echo 'a b'"]);
  });

  it('re-exposes a resolv.conf that lives under a hidden dir, and swaps it for a loopback resolver', () => {
    const hidden = buildBwrapArgs({
      plan: { network: 'none', layout: layout(), resolvConf: { target: '/run/systemd/resolve/stub-resolv.conf' } },
      cwd: WS,
      command: ['true'],
      exists: everythingExists,
    });
    const target = '/run/systemd/resolve/stub-resolv.conf';
    expect(indexOf(hidden, '--ro-bind', target, target)).toBeGreaterThan(indexOf(hidden, '--tmpfs', '/run'));
    const replaced = buildBwrapArgs({
      plan: {
        network: 'user',
        layout: layout(),
        resolvConf: { target: '/etc/resolv.conf', replacement: '/tmp/r.conf' },
      },
      cwd: WS,
      command: ['true'],
      exists: everythingExists,
    });
    expect(indexOf(replaced, '--ro-bind', '/tmp/r.conf', '/etc/resolv.conf')).toBeGreaterThan(-1);
  });

  it('only masks directories that exist (bwrap cannot create mount points in the read-only root)', () => {
    const list = buildBwrapArgs({
      plan: { network: 'none', layout: layout({ workspace: '/work/ws' }) },
      cwd: '/work/ws',
      command: ['true'],
      exists: (p) => p !== '/root' && p !== '/var/tmp',
    });
    expect(indexOf(list, '--tmpfs', '/root')).toBe(-1);
    expect(indexOf(list, '--tmpfs', '/var/tmp')).toBe(-1);
  });
});

describe('isVisibleInSandbox', () => {
  it('sees the workspace and binds, not the hidden dirs', () => {
    const mounts = planSandboxMounts(layout({ rwBinds: ['/home/alice/cache'] }), everythingExists);
    expect(isVisibleInSandbox(`${WS}/src`, mounts)).toBe(true);
    expect(isVisibleInSandbox('/home/alice/cache/x', mounts)).toBe(true);
    expect(isVisibleInSandbox('/usr/bin', mounts)).toBe(true);
    expect(isVisibleInSandbox(`${DATA}/config.json`, mounts)).toBe(false);
    expect(isVisibleInSandbox('/home/alice/projects', mounts)).toBe(false);
  });
});

function fakeHost(overrides: Partial<SandboxHost> = {}): SandboxHost {
  return {
    platform: 'linux',
    which: (program) => `/usr/bin/${program}`,
    probeBwrap: () => undefined,
    tunUsable: () => true,
    resolvConf: () => ({ target: '/etc/resolv.conf', nameservers: ['10.0.0.53'] }),
    writeSandboxResolvConf: () => '/tmp/sandbox-resolv.conf',
    ...overrides,
  };
}

describe('resolveSandbox', () => {
  it('is off for "none" and ""', () => {
    expect(resolveSandbox({ sandbox: 'none' }, layout(), fakeHost())).toEqual({ kind: 'off' });
    expect(resolveSandbox({ sandbox: '' }, layout(), fakeHost())).toEqual({ kind: 'off' });
  });

  it('auto uses bwrap with user networking when bwrap and slirp4netns are installed', () => {
    const result = resolveSandbox({}, layout(), fakeHost());
    expect(result.kind).toBe('bwrap');
    if (result.kind !== 'bwrap') return;
    expect(result.plan.bwrap).toBe('/usr/bin/bwrap');
    expect(result.plan.network).toBe('user');
    expect(result.plan.slirp4netns).toBe('/usr/bin/slirp4netns');
  });

  it('auto falls back to no network without slirp4netns, and to no sandbox without bwrap', () => {
    const noSlirp = resolveSandbox(
      {},
      layout(),
      fakeHost({ which: (p) => (p === 'bwrap' ? '/usr/bin/bwrap' : undefined) }),
    );
    expect(noSlirp.kind === 'bwrap' && noSlirp.plan.network).toBe('none');
    const noBwrap = resolveSandbox({ sandbox: 'auto' }, layout(), fakeHost({ which: () => undefined }));
    expect(noBwrap).toEqual({ kind: 'off', note: 'Sandbox off: bubblewrap (bwrap) is not installed.' });
  });

  it('"bwrap" without bubblewrap is an error that says how to fix it', () => {
    const result = resolveSandbox({ sandbox: 'bwrap' }, layout(), fakeHost({ which: () => undefined }));
    expect(result.kind).toBe('unavailable');
    if (result.kind !== 'unavailable') return;
    expect(result.error).toMatch(/bubblewrap \(bwrap\) is not installed/);
    expect(result.error).toMatch(/apt-get install bubblewrap/);
    expect(result.error).toMatch(/set tools\.exec\.sandbox to "none"/);
  });

  it('"bwrap" that cannot create namespaces is an error; auto turns the sandbox off', () => {
    const broken = fakeHost({ probeBwrap: () => 'No permissions to create new namespace' });
    const required = resolveSandbox({ sandbox: 'bwrap' }, layout(), broken);
    expect(required.kind === 'unavailable' && required.error).toMatch(/cannot create a sandbox here \(No permissions/);
    expect(resolveSandbox({}, layout(), broken).kind).toBe('off');
  });

  it('sandboxNetwork "user" without slirp4netns is an error; "host" and "none" are taken as given', () => {
    const noSlirp = fakeHost({ which: (p) => (p === 'bwrap' ? '/usr/bin/bwrap' : undefined) });
    const user = resolveSandbox({ sandboxNetwork: 'user' }, layout(), noSlirp);
    expect(user.kind === 'unavailable' && user.error).toMatch(/apt-get install slirp4netns/);
    const host = resolveSandbox({ sandboxNetwork: 'host' }, layout(), fakeHost());
    expect(host.kind === 'bwrap' && host.plan.network).toBe('host');
  });

  it('points a user-mode network at slirp DNS when the host resolver is on loopback', () => {
    const loopback = fakeHost({
      resolvConf: () => ({ target: '/run/systemd/resolve/stub-resolv.conf', nameservers: ['127.0.0.53'] }),
    });
    const result = resolveSandbox({}, layout(), loopback);
    expect(result.kind === 'bwrap' && result.plan.resolvConf).toEqual({
      target: '/run/systemd/resolve/stub-resolv.conf',
      replacement: '/tmp/sandbox-resolv.conf',
    });
  });

  it('needs Linux', () => {
    const mac = resolveSandbox({ sandbox: 'bwrap' }, layout(), fakeHost({ platform: 'darwin' }));
    expect(mac.kind === 'unavailable' && mac.error).toMatch(/need Linux/);
  });
});
