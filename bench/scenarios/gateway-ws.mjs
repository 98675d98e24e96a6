// `nanobot gateway` end to end over its WebSocket channel (nanobot's protocol: connect with client_id and token, send
// {"content": …}, the reply arrives as delta / stream_end or message, then turn_end). N clients, one chat each, hold a
// conversation of T turns: each sends its next message once the previous reply arrived. The fake LLM (its own process)
// answers after a fixed latency; overhead = reply time − send time − latency. A new gateway per run. By default every
// client sends its next message the moment a reply arrives (lockstep bursts of N turns at once: the worst case, where
// p99 is the time to work off one burst); --think=MS gives each user a pause of MS and spreads the first messages.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { spawnFakeLLM } from '../lib/llm.mjs';
import { pause, startProcess } from '../lib/proc.mjs';
import { Figure, percentile } from '../lib/stats.mjs';

const TURN_TIMEOUT_MS = 60_000;

export async function gatewayWs(ctx) {
  const sessions = ctx.quick ? 50 : 1000;
  const turns = ctx.quick ? 3 : 5;
  const latencyMs = ctx.quick ? 50 : 200;
  const pacing = ctx.thinkMs > 0 ? `think time ${ctx.thinkMs} ms` : 'lockstep';
  ctx.report.section(
    `Gateway over WebSocket: ${sessions} sessions × ${turns} turns, LLM latency ${latencyMs} ms, ${pacing}`,
  );
  for (const agent of ctx.agents.filter((a) => a.id !== 'ours')) {
    ctx.report.skip(`gateway-ws/${agent.id}`, agent.websocketGap ?? 'no nanobot-protocol WebSocket channel');
  }
  if (!existsSync(join(ctx.root, 'src', 'channels', 'websocket', 'index.ts'))) {
    ctx.report.skip('gateway-ws/ours', 'the WebSocket channel (src/channels/websocket/) is not there yet');
    return;
  }
  const llm = await spawnFakeLLM({ latencyMs });
  const samples = { p50: [], p99: [], peak: [], broken: [], rate: [] };
  // A new gateway per run; quick mode reuses one (new sessions each run) to stay short.
  let gateway;
  let spec;
  try {
    for (let run = 0; run < ctx.runs; run++) {
      if (!gateway || !ctx.quick) {
        await gateway?.stop();
        const h = await ctx.ours.home(llm.url);
        spec = ctx.ours.gateway(h, { maxConcurrent: sessions });
        gateway = await startProcess(ctx.ours.node, spec.argv, {
          env: { ...h.env, ...spec.env },
          cwd: h.cwd,
          ready: spec.ready,
          what: 'nanobot gateway',
        });
      }
      const result = await converse(spec.wsUrl, sessions, turns, `r${run}`, ctx.thinkMs);
      const overheads = result.latencies.map((ms) => ms - latencyMs);
      samples.p50.push(percentile(overheads, 50));
      samples.p99.push(percentile(overheads, 99));
      samples.broken.push(result.lost + result.reordered);
      samples.rate.push(result.answered / result.seconds);
      samples.peak.push(gateway.rss().peakMb);
    }
  } finally {
    await gateway?.stop();
    await llm.close();
  }
  const note = `NANOBOT_MAX_CONCURRENT_REQUESTS=${sessions} (default 3), streaming on (the channel's default)`;
  ctx.report.add(new Figure('gateway-ws/p50-overhead/ours', 'ms', samples.p50));
  ctx.report.add(new Figure('gateway-ws/p99-overhead/ours', 'ms', samples.p99, { note }));
  ctx.report.add(new Figure('gateway-ws/peak-rss/ours', 'MB', samples.peak, { note: 'gateway process (VmHWM)' }));
  ctx.report.add(
    new Figure('gateway-ws/lost+reordered/ours', '', samples.broken, { note: `of ${sessions * turns} turns` }),
  );
  ctx.report.add(new Figure('gateway-ws/turns-per-s/ours', 'turns/s', samples.rate, { higherIsBetter: true }));
}

/** Opens one client per session, then runs every conversation at once; returns reply latencies and what went wrong. */
async function converse(wsUrl, sessions, turns, prefix, thinkMs) {
  const clients = [];
  for (let i = 0; i < sessions; i += 100) {
    const batch = Array.from({ length: Math.min(100, sessions - i) }, (_, k) =>
      connect(wsUrl(`bench-${prefix}-${i + k}`)),
    );
    clients.push(...(await Promise.all(batch)));
  }
  const latencies = [];
  let lost = 0;
  let reordered = 0;
  const started = performance.now();
  await Promise.all(
    clients.map(async (client, i) => {
      if (thinkMs > 0) await pause(Math.random() * thinkMs);
      for (let turn = 0; turn < turns; turn++) {
        if (turn > 0 && thinkMs > 0) await pause(thinkMs);
        const id = `${prefix}s${i}-t${turn}`;
        const sent = performance.now();
        const reply = client.nextReply();
        client.socket.send(JSON.stringify({ content: `bench ${id} tools=0` }));
        const text = await reply;
        if (text === undefined) lost += 1;
        else {
          latencies.push(performance.now() - sent);
          if (!text.includes(`echo ${id}`)) reordered += 1;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  for (const client of clients) client.socket.close();
  return { latencies, lost, reordered, answered: latencies.length, seconds };
}

/** A client that collects the text of each turn (streamed or not) and resolves it at `turn_end`. */
function connect(url) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    let text = '';
    let waiting;
    const client = {
      socket,
      nextReply: () =>
        new Promise((done) => {
          const timer = setTimeout(() => {
            waiting = undefined;
            done(undefined);
          }, TURN_TIMEOUT_MS);
          waiting = (value) => {
            clearTimeout(timer);
            done(value);
          };
        }),
    };
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data));
      if (frame.event === 'ready') resolve(client);
      else if (frame.event === 'delta') text += frame.text;
      else if (frame.event === 'stream_end' && typeof frame.text === 'string') text = frame.text;
      else if (frame.event === 'message' && !frame.kind) text = frame.text;
      else if (frame.event === 'turn_end') {
        const finished = text;
        text = '';
        const resolveReply = waiting;
        waiting = undefined;
        resolveReply?.(finished);
      }
    });
    socket.on('error', reject);
  });
}
