// The first request an agent sends for a fresh workspace (a new home each run): bytes on the wire and estimated tokens,
// with the system prompt and tool schemas that make them up.
import { spawnFakeLLM } from '../lib/llm.mjs';
import { assertOk, runTimed } from '../lib/proc.mjs';
import { anatomy, estimateTokens } from '../lib/requests.mjs';
import { Figure, formatValue, median } from '../lib/stats.mjs';

export async function firstRequest(ctx) {
  ctx.report.section('First request for a fresh workspace: bytes and estimated tokens');
  const llm = await spawnFakeLLM({ record: true });
  const results = new Map();
  try {
    for (let i = 0; i < ctx.runs; i++) {
      for (const agent of ctx.agents) {
        const entry = results.get(agent.id) ?? { bytes: [], tokens: [], parts: [] };
        results.set(agent.id, entry);
        if (entry.error) continue;
        try {
          await llm.clear();
          const h = await agent.home(llm.url);
          const id = `f${i}`;
          const { argv } = agent.oneShot(h, `bench ${id} tools=0`, `bench-${id}`, 'first-request');
          assertOk(await runTimed(agent.node, argv, { env: h.env, cwd: h.cwd }), `${agent.id} one-shot turn`);
          const first = (await llm.requests()).find((r) => r.id === id);
          if (!first) throw new Error('no request reached the fake LLM');
          entry.bytes.push(first.bytes);
          entry.tokens.push(estimateTokens(first.body));
          entry.parts.push(anatomy(first.body));
        } catch (err) {
          entry.error = err.message;
        }
      }
    }
  } finally {
    await llm.close();
  }
  const figures = new Map();
  for (const agent of ctx.agents) {
    const entry = results.get(agent.id);
    if (entry.error) {
      ctx.report.skip(`first-request/${agent.id}`, `failed: ${entry.error}`);
      continue;
    }
    const system = median(entry.parts.map((p) => p.systemBytes));
    const tools = entry.parts[0];
    const note = `system prompt ${formatValue(system / 1024, 'KB')}, ${tools.toolCount} tool schemas ${formatValue(tools.toolBytes / 1024, 'KB')}`;
    figures.set(agent.id, {
      bytes: new Figure(`first-request/bytes/${agent.id}`, 'B', entry.bytes, { note }),
      tokens: new Figure(`first-request/tokens/${agent.id}`, 'tok', entry.tokens),
    });
  }
  const mine = figures.get('ours');
  for (const [id, theirs] of figures) {
    if (id === 'ours' || !mine) continue;
    mine.bytes.compare(id, theirs.bytes);
    mine.tokens.compare(id, theirs.tokens);
  }
  for (const { bytes, tokens } of figures.values()) {
    ctx.report.add(bytes);
    ctx.report.add(tokens);
  }
}
