// Child processes for benches: one-shot commands timed to exit with their peak RSS, long-lived servers with their
// resident memory read from /proc, free loopback ports.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PRELOAD = join(dirname(fileURLToPath(import.meta.url)), 'rss-preload.cjs');
export const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Share of the machine's CPU time spent busy over `ms` (from /proc/stat); undefined where there is none. */
async function busyShare(ms) {
  const sample = () => {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    return { idle, total: fields.reduce((a, b) => a + b, 0) };
  };
  try {
    const before = sample();
    await pause(ms);
    const after = sample();
    return 1 - (after.idle - before.idle) / Math.max(1, after.total - before.total);
  } catch {
    return undefined;
  }
}

/**
 * Waits (up to `maxMs`) until the machine is quiet: a process an earlier run left behind (a peer's background
 * daemon winding down) would otherwise be timed as part of the next run, whoever's it is.
 */
export async function settle(maxMs = 10_000) {
  const deadline = Date.now() + maxMs;
  while (Date.now() < deadline) {
    const busy = await busyShare(250);
    if (busy === undefined || busy < 0.15) return;
  }
}

/**
 * Runs `node argv…` to exit. `ms` is spawn → exit; `peakRssMb` the largest peak RSS of the Node processes it ran
 * (a preload records each one's `maxRSS` as it exits; the baseline `node -e ""` gets the same preload).
 */
export function runTimed(node, argv, { env = {}, cwd, timeoutMs = 300_000 } = {}) {
  const rssDir = mkdtempSync(join(tmpdir(), 'nb-bench-rss-'));
  const childEnv = { ...env, NODE_OPTIONS: `--require=${PRELOAD}`, NB_BENCH_RSS_DIR: rssDir };
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const startEpoch = performance.timeOrigin + start;
    const child = spawn(node, argv, { env: childEnv, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let exited;
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      exited = { ms: performance.now() - start, code, signal };
    });
    child.on('close', () => {
      clearTimeout(timer);
      const peakKb = Math.max(0, ...readdirSync(rssDir).map((f) => Number(readFileSync(join(rssDir, f), 'utf8'))));
      rmSync(rssDir, { recursive: true, force: true });
      resolve({ ...exited, startEpoch, stdout, stderr, peakRssMb: peakKb / 1024 });
    });
  });
}

/** Throws with the command's output when it failed. */
export function assertOk(result, what) {
  if (result.code === 0) return result;
  const output = `${result.stderr}\n${result.stdout}`.trim().split('\n').slice(-8).join('\n');
  throw new Error(`${what} exited ${result.code ?? result.signal}: ${output}`);
}

/**
 * Starts a long-lived `node argv…` and waits until `ready()` resolves true. Output is kept (last 64 KB) for errors.
 * `stop()` sends SIGTERM, then SIGKILL after `graceMs`, to the process and to any of its descendants left behind.
 */
export async function startProcess(node, argv, { env = {}, cwd, ready, timeoutMs = 120_000, what = 'server' } = {}) {
  const started = performance.now();
  const child = spawn(node, argv, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (d) => {
    output = (output + d).slice(-65_536);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exitCode;
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      exitCode = code ?? signal;
      resolve(exitCode);
    }),
  );
  const handle = {
    pid: child.pid,
    output: () => output,
    rss: () => processTreeMemory(child.pid),
    async stop(graceMs = 15_000) {
      if (exitCode !== undefined) return;
      const descendants = descendantsOf(child.pid);
      child.kill('SIGTERM');
      const done = await Promise.race([exited.then(() => true), pause(graceMs).then(() => false)]);
      if (!done) child.kill('SIGKILL');
      await exited;
      for (const pid of descendants) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  };
  while (!(await ready().catch(() => false))) {
    if (exitCode !== undefined) throw new Error(`${what} exited ${exitCode} before it was ready: ${tail(output)}`);
    if (performance.now() - started > timeoutMs) {
      await handle.stop(2_000);
      throw new Error(`${what} was not ready after ${timeoutMs / 1000} s: ${tail(output)}`);
    }
    await pause(100);
  }
  handle.readyMs = performance.now() - started;
  return handle;
}

const tail = (text) => text.trim().split('\n').slice(-6).join('\n');

/** Pids and parents of every process, from /proc. */
function processTable() {
  const parents = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(name), ppid);
    } catch {
      // exited meanwhile
    }
  }
  return parents;
}

export function descendantsOf(pid) {
  const parents = processTable();
  const out = [];
  const walk = (p) => {
    for (const [child, parent] of parents) {
      if (parent === p) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

function statusKb(pid, field) {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** RSS and peak RSS (VmHWM) of the process, and RSS of it with all its descendants, in MB. */
export function processTreeMemory(pid) {
  const all = [pid, ...descendantsOf(pid)];
  return {
    rssMb: statusKb(pid, 'VmRSS') / 1024,
    peakMb: statusKb(pid, 'VmHWM') / 1024,
    treeRssMb: all.reduce((sum, p) => sum + statusKb(p, 'VmRSS'), 0) / 1024,
    processes: all.length,
  };
}

/** Free loopback ports (bound and released: another process could take one meanwhile, which is unlikely). */
export async function freePorts(count) {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise((resolve, reject) => {
          const server = net.createServer();
          server.on('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/** True when GET `url` answers 2xx. */
export async function httpOk(url, headers = {}) {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(5_000) });
  await res.arrayBuffer();
  return res.ok;
}
