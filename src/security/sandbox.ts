/**
 * The exec sandbox: bubblewrap with the host's root read-only, the workspace read-write, and everything
 * that holds the user's secrets (home, the nanobot data dir with config.json, /run's sockets) hidden behind
 * empty tmpfs mounts. The guard in exec-guard.ts is advisory; this is the boundary that holds when a model
 * writes `python3 -c "shutil.rmtree(...)"`.
 *
 * Network: `--unshare-net` alone leaves only a private loopback. slirp4netns (`--disable-host-loopback`)
 * gives the sandbox outbound network through a user-mode NAT that cannot reach the host's 127.0.0.1.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  chooseSandboxIdentity,
  DEFAULT_SANDBOX_LIMITS,
  type IdentityHost,
  identityAndLimitsPrefix,
  realIdentityHost,
  type SandboxIdentity,
  type SandboxLimits,
} from './sandbox-identity.js';
import { expandHome, isPathInside } from './workspace.js';

export const SANDBOX_MODES = ['auto', 'bwrap', 'none', ''] as const;
/** `auto` = bubblewrap when it is installed and works; `""` is nanobot's spelling of `none`. */
export type SandboxMode = (typeof SANDBOX_MODES)[number];
export const SANDBOX_NETWORK_MODES = ['auto', 'user', 'none', 'host'] as const;
/** `auto` = `user` when slirp4netns is usable, else `none`; `host` shares the host network, loopback included. */
export type SandboxNetworkMode = (typeof SANDBOX_NETWORK_MODES)[number];
export type SandboxNetwork = 'user' | 'none' | 'host';

/** The `tools.exec` keys that shape the sandbox. */
export interface SandboxSettings {
  sandbox?: SandboxMode;
  sandboxNetwork?: SandboxNetworkMode;
  /** Extra host paths visible read-only (e.g. a tool install under the hidden home). */
  sandboxRoBinds?: string[];
  /** Extra host paths visible read-write (e.g. a package cache). */
  sandboxRwBinds?: string[];
  /** Process and memory limits for sandboxed commands (defaults: DEFAULT_SANDBOX_LIMITS). */
  sandboxLimits?: Partial<SandboxLimits>;
}

/** Where things live on the host. All paths absolute. */
export interface SandboxLayout {
  workspace: string;
  homeDir: string;
  /** The nanobot data dir (~/.nanobot): config.json with API keys, sessions. Always hidden. */
  dataDir: string;
  /** Visible read-only even inside a hidden dir (the media dir). */
  readOnlyDirs: string[];
  roBinds: string[];
  rwBinds: string[];
}

export interface BwrapPlan {
  bwrap: string;
  network: SandboxNetwork;
  /** Set when network is `user`. */
  slirp4netns?: string;
  layout: SandboxLayout;
  /** Host resolv.conf (real path) and, for `user` networking with a loopback resolver, a replacement file. */
  resolvConf?: { target: string; replacement?: string };
  /** Set when nanobot runs as root: the unprivileged uid commands switch to inside the sandbox. */
  identity?: SandboxIdentity;
  /** prlimit (util-linux), which applies `limits` inside the sandbox; without it there are no limits. */
  prlimit?: string;
  limits?: SandboxLimits;
  /** Why a protection is missing here (no setpriv, no prlimit, a workspace that cannot be handed over). */
  notes?: string[];
}

export type SandboxResolution =
  | { kind: 'off'; note?: string }
  | { kind: 'bwrap'; plan: BwrapPlan }
  | { kind: 'unavailable'; error: string };

export interface BwrapMount {
  source: string;
  dest: string;
  writable: boolean;
}

export interface SandboxMounts {
  /** Directories replaced by an empty tmpfs, shallowest first. */
  masks: string[];
  /** Bind mounts applied on top of the masks, shallowest first, so deeper binds win. */
  binds: BwrapMount[];
  /** The data dir again, when it sits inside the workspace (workspace = ~), applied after the binds. */
  lateMasks: string[];
  /** Binds inside a late mask (the media dir), re-applied on top of it. */
  lateBinds: BwrapMount[];
  /** Files replaced by /dev/null: config.json when the workspace is the data dir itself. */
  hiddenFiles: string[];
}

/** Hidden whatever the layout: other users' homes, root's home, /run (docker.sock, D-Bus) and private temp dirs. */
const ALWAYS_MASKED = ['/home', '/root', '/run', '/tmp', '/var/tmp'];
/** Host files with secrets that root (uid 0 keeps owner rights without capabilities) could still read. */
const SECRET_FILES = ['/etc/shadow', '/etc/gshadow'];
const SLIRP_DNS = '10.0.2.3';
const TRANSIENT_CAPS = ['CAP_DAC_READ_SEARCH', 'CAP_SETUID', 'CAP_SETGID', 'CAP_SETPCAP'];

const depth = (p: string): number => p.split('/').filter(Boolean).length;
const byDepth =
  <T>(key: (item: T) => string) =>
  (a: T, b: T) =>
    depth(key(a)) - depth(key(b));

function normaliseBind(raw: string, homeDir: string): string | undefined {
  const value = raw.trim();
  if (value === '') return undefined;
  const expanded = expandHome(value.replace(/^\$HOME(?=\/|$)/, homeDir), homeDir);
  return path.isAbsolute(expanded) ? path.resolve(expanded) : undefined;
}

/**
 * Which directories are hidden and which binds go on top. Pure apart from `exists`, so tests can drive it.
 * A user bind that contains the workspace or the data dir is dropped: it would uncover config.json
 * (nanobot drops workspace-parent binds for the same reason).
 */
export function planSandboxMounts(layout: SandboxLayout, exists: (p: string) => boolean): SandboxMounts {
  const workspace = path.resolve(layout.workspace);
  const dataDir = path.resolve(layout.dataDir);
  const candidates = [...ALWAYS_MASKED, layout.homeDir, dataDir, path.dirname(workspace)]
    .map((p) => path.resolve(p))
    .filter((p) => p !== '/' && exists(p));
  const unique = [...new Set(candidates)].sort(byDepth((p: string) => p));
  const masks = unique.filter((p) => !unique.some((other) => other !== p && isPathInside(p, other)));

  const userBinds = (list: string[], writable: boolean): BwrapMount[] =>
    list
      .map((raw) => normaliseBind(raw, layout.homeDir))
      .filter((p): p is string => p !== undefined && ![workspace, dataDir].some((inner) => isPathInside(inner, p)))
      .map((p) => ({ source: p, dest: p, writable }));
  const readOnly = layout.readOnlyDirs.map((p) => ({
    source: path.resolve(p),
    dest: path.resolve(p),
    writable: false,
  }));
  const all = [
    ...readOnly,
    ...userBinds(layout.roBinds, false),
    ...userBinds(layout.rwBinds, true),
    { source: workspace, dest: workspace, writable: true },
  ];
  const seen = new Set<string>();
  const binds = all.filter((bind) => !seen.has(bind.dest) && seen.add(bind.dest)).sort(byDepth((b) => b.dest));

  const dataInsideWorkspace = dataDir !== workspace && isPathInside(dataDir, workspace) && exists(dataDir);
  const lateMasks = dataInsideWorkspace ? [dataDir] : [];
  const lateBinds = dataInsideWorkspace
    ? binds.filter((bind) => bind.dest !== dataDir && isPathInside(bind.dest, dataDir))
    : [];
  const config = path.join(dataDir, 'config.json');
  const hiddenFiles = dataDir === workspace && exists(config) ? [config] : [];
  return { masks, binds, lateMasks, lateBinds, hiddenFiles };
}

/** True when `target` can be seen inside the sandbox (not under a mask, or re-exposed by a bind). */
export function isVisibleInSandbox(target: string, mounts: SandboxMounts): boolean {
  const absolute = path.resolve(target);
  const inside = (list: string[]) => list.some((dir) => isPathInside(absolute, dir));
  if (inside(mounts.lateBinds.map((bind) => bind.dest))) return true;
  if (inside(mounts.lateMasks) || mounts.hiddenFiles.includes(absolute)) return false;
  return inside(mounts.binds.map((bind) => bind.dest)) || !inside(mounts.masks);
}

export interface BwrapArgsInput {
  plan: Pick<BwrapPlan, 'network' | 'layout' | 'resolvConf' | 'identity' | 'prlimit' | 'limits'>;
  /** Tasks the sandbox uid already runs: RLIMIT_NPROC counts them too, so the limit is set this much higher. */
  nprocBase?: number;
  cwd: string;
  /** The program and its arguments, e.g. `['/bin/bash', '-c', 'ls']`. */
  command: string[];
  /** For `user` networking: bwrap reports the sandbox pid on `info` and waits on `block` until the network is up. */
  syncFds?: { info: number; block: number };
  exists?: (p: string) => boolean;
}

/** Ancestors of `dest` strictly inside a masked (empty tmpfs) directory: bwrap must create them. */
function dirsBelowMasks(dest: string, masks: string[]): string[] {
  const dirs: string[] = [];
  for (let dir = path.dirname(dest); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (masks.some((mask) => dir !== mask && isPathInside(dir, mask))) dirs.unshift(dir);
  }
  return dirs;
}

/** The bwrap argument list (without the bwrap binary itself). Pure given `exists`. */
export function buildBwrapArgs(input: BwrapArgsInput): string[] {
  const exists = input.exists ?? fs.existsSync;
  const { plan } = input;
  const mounts = planSandboxMounts(plan.layout, exists);
  const args = [
    '--die-with-parent',
    '--new-session',
    // Root keeps every capability inside bwrap unless told otherwise, and could remount / read-write.
    '--cap-drop',
    'ALL',
    // Only until setpriv switches to the unprivileged uid (the kernel clears them then): bwrap's chdir into a
    // workspace that uid owns (mode 0700 too), and the switch itself.
    ...(plan.identity ? TRANSIENT_CAPS.flatMap((cap) => ['--cap-add', cap]) : []),
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'nanobot-sandbox',
  ];
  if (plan.network !== 'host') args.push('--unshare-net');
  args.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc');
  // uid 0 may write sysctls (core_pattern!) by file mode alone; bwrap skips covering /proc/sys after --cap-drop.
  args.push('--ro-bind', '/proc/sys', '/proc/sys', '--ro-bind-try', '/proc/sysrq-trigger', '/proc/sysrq-trigger');
  // An unprivileged uid must still be able to use the private /tmp and home (they are this sandbox's alone).
  const tmpfs = (dir: string) => args.push(...(plan.identity ? ['--perms', '1777'] : []), '--tmpfs', dir);
  mounts.masks.forEach(tmpfs);
  for (const file of SECRET_FILES) if (exists(file)) args.push('--ro-bind', '/dev/null', file);
  const resolv = plan.resolvConf;
  if (resolv && (resolv.replacement || !isVisibleInSandbox(resolv.target, mounts))) {
    args.push('--ro-bind', resolv.replacement ?? resolv.target, resolv.target);
  }
  const workspace = path.resolve(plan.layout.workspace);
  const allMasks = [...mounts.masks, ...mounts.lateMasks];
  const pushBind = (bind: BwrapMount) => {
    // bwrap makes missing mount points 0700 root; an unprivileged uid could not walk through them to the bind.
    if (plan.identity) for (const dir of dirsBelowMasks(bind.dest, allMasks)) args.push('--dir', dir);
    // The workspace must exist; optional binds (`-try`) are skipped by bwrap when their source is missing.
    const flag = bind.writable ? (bind.dest === workspace ? '--bind' : '--bind-try') : '--ro-bind-try';
    args.push(flag, bind.source, bind.dest);
  };
  mounts.binds.forEach(pushBind);
  mounts.lateMasks.forEach(tmpfs);
  mounts.lateBinds.forEach(pushBind);
  for (const file of mounts.hiddenFiles) args.push('--ro-bind', '/dev/null', file);
  if (input.syncFds) {
    args.push('--info-fd', String(input.syncFds.info), '--block-fd', String(input.syncFds.block));
  }
  const limits = plan.limits ?? DEFAULT_SANDBOX_LIMITS;
  const prefix = identityAndLimitsPrefix(plan.identity, limits, plan.prlimit, input.nprocBase ?? 0);
  args.push('--chdir', input.cwd, '--', ...prefix, ...input.command);
  return args;
}

/** What resolveSandbox asks of the host; tests replace it. */
export interface SandboxHost {
  platform: NodeJS.Platform;
  which(program: string): string | undefined;
  /** Undefined when a minimal bwrap sandbox starts, else its error output. */
  probeBwrap(bwrap: string): string | undefined;
  /** slirp4netns needs /dev/net/tun. */
  tunUsable(): boolean;
  /** Real path and nameservers of /etc/resolv.conf, if present. */
  resolvConf(): { target: string; nameservers: string[] } | undefined;
  /** Writes a resolv.conf for the sandbox and returns its path. */
  writeSandboxResolvConf(content: string): string;
  /** Who commands run as when nanobot is root; without it they keep nanobot's uid. */
  identity?: IdentityHost;
}

const BWRAP_INSTALL_HINT =
  'Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap) ' +
  'or set tools.exec.sandbox to "none" to run commands without a sandbox.';

/** Decides how commands run. Never throws; the result is cached by the caller. */
export function resolveSandbox(
  settings: SandboxSettings,
  layout: SandboxLayout,
  host: SandboxHost = realSandboxHost,
): SandboxResolution {
  const mode = settings.sandbox ?? 'auto';
  if (mode === 'none' || mode === '') return { kind: 'off' };
  const required = mode === 'bwrap';
  const unavailable = (why: string): SandboxResolution =>
    required
      ? { kind: 'unavailable', error: `tools.exec.sandbox is "bwrap" but ${why}. ${BWRAP_INSTALL_HINT}` }
      : { kind: 'off', note: `Sandbox off: ${why}.` };

  if (host.platform !== 'linux') return unavailable('bubblewrap sandboxes need Linux');
  const bwrap = host.which('bwrap');
  if (!bwrap) return unavailable('bubblewrap (bwrap) is not installed');
  const probeError = host.probeBwrap(bwrap);
  if (probeError) return unavailable(`bubblewrap cannot create a sandbox here (${probeError})`);

  const wanted = settings.sandboxNetwork ?? 'auto';
  const slirp = host.which('slirp4netns');
  const userNetOk = slirp !== undefined && host.tunUsable();
  if (wanted === 'user' && !userNetOk) {
    const why = slirp ? '/dev/net/tun is missing or not usable' : 'slirp4netns is not installed';
    return {
      kind: 'unavailable',
      error:
        `tools.exec.sandboxNetwork is "user" but ${why}. Install slirp4netns (apt-get install slirp4netns), ` +
        'or set sandboxNetwork to "none" (no network) or "host" (host network, loopback included).',
    };
  }
  const network: SandboxNetwork = wanted === 'auto' ? (userNetOk ? 'user' : 'none') : wanted;
  const plan: BwrapPlan = { bwrap, network, layout, ...(network === 'user' && slirp ? { slirp4netns: slirp } : {}) };
  const notes: string[] = [];
  const choice = host.identity ? chooseSandboxIdentity(layout, host.identity) : {};
  if (choice.identity) plan.identity = choice.identity;
  if (choice.note) notes.push(choice.note);
  const prlimit = host.which('prlimit');
  if (prlimit) plan.prlimit = prlimit;
  else notes.push('prlimit (util-linux) is not installed, so sandboxed commands have no process or memory limit');
  plan.limits = { ...DEFAULT_SANDBOX_LIMITS, ...settings.sandboxLimits };
  if (notes.length > 0) plan.notes = notes;

  const resolv = host.resolvConf();
  if (resolv) {
    // Inside a user-mode network the host's 127.0.0.53 is the sandbox's own loopback; use slirp's DNS forwarder.
    const loopbackOnly = resolv.nameservers.length > 0 && resolv.nameservers.every((ns) => /^(127\.|::1$)/.test(ns));
    plan.resolvConf =
      network === 'user' && loopbackOnly
        ? { target: resolv.target, replacement: host.writeSandboxResolvConf(`nameserver ${SLIRP_DNS}\n`) }
        : { target: resolv.target };
  }
  return { kind: 'bwrap', plan };
}

function which(program: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/local/bin', '/usr/bin', '/bin'];
  for (const dir of dirs) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, program);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return fs.realpathSync(candidate);
    } catch {
      // Not here.
    }
  }
  return undefined;
}

const PROBE_ARGS = [
  ...['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--cap-drop', 'ALL'],
  ...['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--', 'true'],
];
/** Probe outcomes by bwrap path: the first line of its error, or undefined when it can build a sandbox. */
const probeOutcomes = new Map<string, string | undefined>();
const probeError = (stderr: string, fallback: string) => (stderr || fallback).trim().split('\n')[0];

/**
 * Probes bubblewrap in the background, so the first exec call (or the exec tool's description, which says whether
 * commands are sandboxed) finds the answer ready instead of blocking the event loop on a child process.
 */
export function probeSandboxInBackground(): void {
  if (process.platform !== 'linux') return;
  const bwrap = which('bwrap');
  if (!bwrap || probeOutcomes.has(bwrap)) return;
  let stderr = '';
  const child = spawn(bwrap, PROBE_ARGS, { timeout: 5000, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const settle = (outcome: string | undefined) => {
    if (!probeOutcomes.has(bwrap)) probeOutcomes.set(bwrap, outcome);
  };
  child.on('error', (err) => settle(probeError('', err.message)));
  child.on('close', (code) => settle(code === 0 ? undefined : probeError(stderr, `exit ${code}`)));
}

export const realSandboxHost: SandboxHost = {
  platform: process.platform,
  which,
  identity: realIdentityHost(which),
  probeBwrap(bwrap) {
    if (!probeOutcomes.has(bwrap)) {
      const result = spawnSync(bwrap, PROBE_ARGS, {
        encoding: 'utf8',
        timeout: 5000,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      probeOutcomes.set(
        bwrap,
        result.status === 0 ? undefined : probeError(result.stderr, result.error?.message ?? `exit ${result.status}`),
      );
    }
    return probeOutcomes.get(bwrap);
  },
  tunUsable() {
    try {
      fs.accessSync('/dev/net/tun', fs.constants.R_OK | fs.constants.W_OK);
      return true;
    } catch {
      return false;
    }
  },
  resolvConf() {
    try {
      const target = fs.realpathSync('/etc/resolv.conf');
      const text = fs.readFileSync(target, 'utf8');
      const nameservers = [...text.matchAll(/^\s*nameserver\s+(\S+)/gm)].map((m) => m[1] as string);
      return { target, nameservers };
    } catch {
      return undefined;
    }
  },
  writeSandboxResolvConf(content) {
    const file = path.join(os.tmpdir(), `nanobot-sandbox-resolv-${process.getuid?.() ?? 0}.conf`);
    fs.writeFileSync(file, content, { mode: 0o644 });
    return file;
  },
};

/**
 * bwrap brings up `lo` in the new namespace while it already reports the pid; slirp4netns also sets `lo`
 * up, and when the two overlap bwrap fails ("loopback: Failed RTM_NEWADDR"). The loopback broadcast route
 * exists only once lo has its address and is up, i.e. once bwrap is done with it.
 */
async function waitForSandboxLoopback(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let routes: string;
    try {
      routes = fs.readFileSync(`/proc/${pid}/net/fib_trie`, 'utf8');
    } catch {
      throw new Error('the sandbox exited before its network was set up');
    }
    if (routes.includes('127.255.255.255')) return;
    if (Date.now() > deadline) throw new Error(`the sandbox loopback was not up after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

export interface UserNetwork {
  /** Stops slirp4netns (closing its exit fd); safe to call twice. */
  stop(): void;
}

/**
 * Connects the network namespace of a sandbox (started with --unshare-net) to a slirp4netns NAT without
 * host loopback. slirp4netns exits when its exit fd closes, which also happens if this process dies.
 */
export async function attachUserNetwork(
  slirp4netns: string,
  sandboxPid: number,
  timeoutMs = 5000,
): Promise<UserNetwork> {
  await waitForSandboxLoopback(sandboxPid, timeoutMs);
  let sameUserNs = true;
  try {
    sameUserNs = fs.readlinkSync(`/proc/${sandboxPid}/ns/user`) === fs.readlinkSync('/proc/self/ns/user');
  } catch {
    // The sandbox is already gone; slirp4netns will report it.
  }
  const args = ['--configure', '--mtu=65520', '--disable-host-loopback', '--enable-sandbox', '--enable-seccomp'];
  if (!sameUserNs) args.push(`--userns-path=/proc/${sandboxPid}/ns/user`);
  args.push('--ready-fd', '3', '--exit-fd', '4', String(sandboxPid), 'tap0');
  const helper = spawn(slirp4netns, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  const stop = () => {
    helper.stdio[4]?.destroy();
    if (helper.exitCode === null && helper.signalCode === null) helper.kill('SIGTERM');
  };
  return new Promise<UserNetwork>((resolve, reject) => {
    let stderr = '';
    helper.stdio[2]?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const fail = (why: string) => {
      clearTimeout(timer);
      stop();
      reject(new Error(`slirp4netns failed: ${why}${stderr.trim() ? ` (${stderr.trim().split('\n').at(-1)})` : ''}`));
    };
    const timer = setTimeout(() => fail(`not ready after ${timeoutMs} ms`), timeoutMs);
    helper.on('error', (error) => fail(error.message));
    helper.on('exit', (code) => fail(`exited with code ${code}`));
    helper.stdio[3]?.once('data', () => {
      clearTimeout(timer);
      helper.removeAllListeners('exit');
      helper.stdio[3]?.destroy();
      resolve({ stop });
    });
  });
}
