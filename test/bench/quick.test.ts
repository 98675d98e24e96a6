// CI smoke for the benchmark: `--quick --no-peers` runs every scenario on small workloads and prints every figure.
// Only the presence of the figures is checked, never their values (timings depend on the machine).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** Figures of ours the quick run must print with a value (ids as printed at the start of each line). */
const FIGURES = [
  'startup/bare-node',
  'startup/version/ours',
  'one-shot/no-tool/ours',
  'one-shot/no-tool/peak-rss/ours',
  'one-shot/two-tools/ours',
  'one-shot/two-tools/peak-rss/ours',
  'one-shot/first-request/ours',
  'first-request/bytes/ours',
  'first-request/tokens/ours',
  'request-build/100/cold/ours',
  'request-build/1000/warm/ours',
  'request-build/10000/cold/ours',
  'request-build/10000/warm/ours',
  'turn-save/10000/ours',
  'api/throughput/ours',
  'api/p50-latency/ours',
  'api/p99-latency/ours',
  'prefix-share/ours',
  'gateway-ws/p50-overhead/ours',
  'gateway-ws/p99-overhead/ours',
  'gateway-ws/peak-rss/ours',
  'gateway-ws/lost+reordered/ours',
  'gateway-ws/turns-per-s/ours',
  'gateway-bus/p99-overhead/ours',
  'gateway-bus/peak-rss/ours',
  'search/gnu-grep-rl',
  'search/grep/files-all/ours',
  'search/find-files/query-all/ours',
  'install/core/ours',
  'install/full/ours',
  'idle-rss/ours',
];

function runBench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bench', 'run.mjs'), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

describe('npm run bench -- --quick --no-peers', () => {
  it('prints the machine, the load average, every figure with min/max, and a verdict for every target', async () => {
    // global-setup built dist/ already.
    const { code, stdout, stderr } = await runBench(['--quick', '--no-peers', '--no-build']);
    expect(stderr).not.toMatch(/Error/);
    expect(code, stdout.slice(-3000)).toBe(0);
    expect(stdout).toMatch(/^Machine: .+ × \d+, \d+ GiB RAM/m);
    expect(stdout).toMatch(/^Commit: \S+/m);
    expect(stdout).toMatch(/^Load average \(1\/5\/15 min\): [\d.]+ \/ [\d.]+ \/ [\d.]+$/m);
    expect(stdout).toMatch(/^ {2}peers\/openclaw\s+skipped: --no-peers$/m);
    expect(stdout).not.toMatch(/skipped: failed/);
    for (const id of FIGURES) {
      // "  <id>   <median> <unit>  (min …, max …, n=5)"
      expect(stdout, id).toMatch(new RegExp(`^ {2}${literal(id)} +[\\d,.]+%?[^\\n]*\\(min [^)]*, n=\\d+\\)`, 'm'));
    }
    const targets = stdout.slice(stdout.indexOf('── targets'));
    expect(targets.match(/^ {2}(met|MISSED) /gm)).toHaveLength(10);
  }, 240_000);
});
