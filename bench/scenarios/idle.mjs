// Idle gateway memory: `runs` gateways per agent started side by side (fresh homes), left alone for --idle-minutes,
// then the resident memory of each gateway with its helper processes. Ours: `nanobot gateway` (WebSocket channel and
// WebUI on, as by default); nanobot: `nanobot gateway`; OpenClaw: `openclaw gateway run`.
import { spawnFakeLLM } from '../lib/llm.mjs';
import { pause, startProcess } from '../lib/proc.mjs';
import { Figure, formatValue } from '../lib/stats.mjs';

export async function idle(ctx) {
  const minutes = ctx.idleMinutes;
  ctx.report.section(
    `Idle gateway: resident memory after ${minutes} min (${ctx.runs} gateways per agent, side by side)`,
  );
  const llm = await spawnFakeLLM();
  const started = [];
  try {
    await Promise.all(
      ctx.agents.map(async (agent) => {
        const entry = { agent, servers: [], atStart: [] };
        started.push(entry);
        try {
          for (let i = 0; i < ctx.runs; i++) {
            const h = await agent.home(llm.url);
            const spec = agent.gateway ? agent.gateway(h) : agent.api(h);
            const server = await startProcess(agent.node, spec.argv, {
              env: { ...h.env, ...spec.env },
              cwd: h.cwd,
              ready: spec.ready,
              timeoutMs: 300_000,
              what: `${agent.id} gateway`,
            });
            entry.servers.push(server);
            entry.atStart.push(server.rss().treeRssMb);
          }
        } catch (err) {
          entry.error = err.message;
        }
      }),
    );
    if (minutes > 0) ctx.report.note(`idling ${minutes} min from ${new Date().toISOString()} …`);
    await pause(minutes * 60_000);
    const figures = [];
    for (const entry of started) {
      const id = entry.agent.id;
      if (entry.error) {
        ctx.report.skip(`idle-rss/${id}`, `failed: ${entry.error}`);
        continue;
      }
      const memory = entry.servers.map((s) => s.rss());
      const processes = Math.max(...memory.map((m) => m.processes));
      const note = `${processes} process(es); ${formatValue(Math.min(...entry.atStart), 'MB')}–${formatValue(Math.max(...entry.atStart), 'MB')} when ready`;
      figures.push(
        new Figure(
          `idle-rss/${id}`,
          'MB',
          memory.map((m) => m.treeRssMb),
          { note },
        ),
      );
    }
    const mine = figures.find((f) => f.id === 'idle-rss/ours');
    for (const theirs of figures) if (mine && theirs !== mine) mine.compare(theirs.id.split('/')[1], theirs);
    for (const figure of figures) ctx.report.add(figure);
  } finally {
    await Promise.all(started.flatMap((e) => e.servers.map((s) => s.stop())));
    await llm.close();
  }
}
