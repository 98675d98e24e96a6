// The gateway's core without its channels (bus → dispatcher → AgentLoop, real JSONL session files), same workload as
// the WebSocket scenario, in a fresh process per run. Set beside gateway-ws, it shows what the channel and the HTTP
// round trip to the LLM add.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BUS_GATEWAY_MODULES, bundleFromSource } from '../lib/load-src.mjs';
import { Figure, percentile } from '../lib/stats.mjs';

const run = promisify(execFile);

export async function gatewayBus(ctx) {
  const sessions = ctx.quick ? 100 : 1000;
  const turns = ctx.quick ? 3 : 5;
  const latencyMs = ctx.quick ? 50 : 200;
  const pacing = ctx.thinkMs > 0 ? `think time ${ctx.thinkMs} ms` : 'lockstep';
  ctx.report.section(
    `Gateway core in process (bus → dispatcher → loop): ${sessions} sessions × ${turns} turns, ${latencyMs} ms, ${pacing}`,
  );
  const script = join(ctx.root, 'bench', 'lib', 'bus-gateway.mjs');
  const bundle = await bundleFromSource(BUS_GATEWAY_MODULES, 'bus-gateway');
  const args = [
    script,
    String(sessions),
    String(turns),
    String(latencyMs),
    `--bundle=${bundle}`,
    `--think=${ctx.thinkMs}`,
  ];
  const samples = { p50: [], p99: [], peak: [], broken: [] };
  for (let i = 0; i < ctx.runs; i++) {
    const { stdout } = await run(process.execPath, args, {
      maxBuffer: 64 * 1024 * 1024,
      timeout: 600_000,
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1));
    samples.p50.push(percentile(result.overheads, 50));
    samples.p99.push(percentile(result.overheads, 99));
    samples.peak.push(result.peakRssKb / 1024);
    samples.broken.push(result.lost + result.reordered);
  }
  ctx.report.add(new Figure('gateway-bus/p50-overhead/ours', 'ms', samples.p50));
  ctx.report.add(new Figure('gateway-bus/p99-overhead/ours', 'ms', samples.p99, { note: pacing }));
  ctx.report.add(new Figure('gateway-bus/peak-rss/ours', 'MB', samples.peak, { note: 'the whole bench process' }));
  ctx.report.add(new Figure('gateway-bus/lost+reordered/ours', '', samples.broken));
}
