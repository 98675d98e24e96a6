// Each agent's HTTP API as a server: throughput and latency for concurrent clients (one session each) against an
// instant fake LLM, after a warm-up round; then one session of several turns (some with tool calls) whose requests
// are compared: the share of each request that the next one repeats byte for byte (what a prompt cache can reuse).
// Ours: `nanobot serve` (/v1/chat/completions); nanobot: its gateway's /api/chat; OpenClaw: its gateway's
// /v1/chat/completions.
import { spawnFakeLLM } from '../lib/llm.mjs';
import { pause, startProcess } from '../lib/proc.mjs';
import { prefixShare, promptBytes } from '../lib/requests.mjs';
import { Figure, formatValue, percentile } from '../lib/stats.mjs';

/** Tool calls per turn of the prefix session: turns with and without tool rounds. */
const PREFIX_TURNS = [0, 2, 0, 1, 0, 2];

export async function api(ctx) {
  const clients = ctx.quick ? 10 : 50;
  const perClient = 2;
  ctx.report.section(
    `API: ${clients} concurrent clients × ${perClient} requests, instant fake LLM; prompt prefix reuse`,
  );
  const llm = await spawnFakeLLM();
  const figures = new Map();
  try {
    for (const agent of ctx.agents) {
      try {
        figures.set(agent.id, await measure(ctx, agent, llm, clients, perClient));
      } catch (err) {
        ctx.report.skip(`api/${agent.id}`, `failed: ${err.message}`);
      }
    }
  } finally {
    await llm.close();
  }
  const mine = figures.get('ours');
  for (const [id, theirs] of figures) {
    if (id === 'ours' || !mine) continue;
    for (const key of Object.keys(theirs)) mine[key]?.compare(id, theirs[key]);
  }
  for (const group of figures.values()) for (const figure of Object.values(group)) ctx.report.add(figure);
}

async function measure(ctx, agent, llm, clients, perClient) {
  const h = await agent.home(llm.url);
  const spec = agent.api(h);
  const server = await startProcess(agent.node, spec.argv, {
    env: h.env,
    cwd: h.cwd,
    ready: spec.ready,
    timeoutMs: 180_000,
    what: `${agent.id} API server`,
  });
  try {
    const ask = async (session, id, tools = 0) => {
      const reply = await spec.chat(session, `bench ${id} tools=${tools}`);
      if (!reply.includes(`echo ${id}`))
        throw new Error(`asked for "echo ${id}", got ${JSON.stringify(reply.slice(0, 200))}`);
    };
    // Warm-up: lazy loads and JIT (OpenClaw's first request takes seconds).
    await Promise.all(Array.from({ length: 10 }, (_, c) => ask(`w${c}`, `w${c}`)));
    const throughput = [];
    const p50 = [];
    const p99 = [];
    for (let run = 0; run < ctx.runs; run++) {
      const latencies = [];
      const started = performance.now();
      await Promise.all(
        Array.from({ length: clients }, async (_, c) => {
          for (let k = 0; k < perClient; k++) {
            const t = performance.now();
            await ask(`r${run}c${c}`, `r${run}c${c}k${k}`);
            latencies.push(performance.now() - t);
          }
        }),
      );
      throughput.push(latencies.length / ((performance.now() - started) / 1000));
      p50.push(percentile(latencies, 50));
      p99.push(percentile(latencies, 99));
    }
    const memory = server.rss();
    const shares = await prefixSession(llm, ask, !ctx.quick);
    const id = agent.id;
    const note = `server peak RSS ${formatValue(memory.peakMb, 'MB')}, ${formatValue(memory.treeRssMb, 'MB')} now in ${memory.processes} process(es)`;
    return {
      throughput: new Figure(`api/throughput/${id}`, 'req/s', throughput, { note, higherIsBetter: true }),
      p50: new Figure(`api/p50-latency/${id}`, 'ms', p50),
      p99: new Figure(`api/p99-latency/${id}`, 'ms', p99),
      prefix: new Figure(`prefix-share/${id}`, '%', shares, {
        note: `${shares.length} consecutive request pairs of one ${PREFIX_TURNS.length}-turn session${ctx.quick ? '' : ' across a minute boundary'}`,
        higherIsBetter: true,
      }),
    };
  } finally {
    await server.stop();
  }
}

/**
 * One session of PREFIX_TURNS turns with the fake recording bodies; the prefix share of each consecutive pair. With
 * `crossMinute`, the second half starts in the next wall-clock minute, so a prompt that shows the time to the minute
 * is caught changing.
 */
async function prefixSession(llm, ask, crossMinute) {
  await llm.configure({ record: true });
  await llm.clear();
  try {
    for (const [turn, tools] of PREFIX_TURNS.entries()) {
      if (crossMinute && turn === PREFIX_TURNS.length / 2) await pause(61_000 - (Date.now() % 60_000));
      await ask('prefix', `p${turn}`, tools);
    }
    const requests = (await llm.requests()).filter((r) => /^p\d+$/.test(r.id ?? ''));
    const prompts = requests.map((r) => promptBytes(r.body));
    return prompts.slice(1).map((next, i) => prefixShare(prompts[i], next));
  } finally {
    await llm.configure({ record: false });
    await llm.clear();
  }
}
