// Cold `--version`, spawn → exit, as a ratio to a bare `node -e ""` of the same Node binary, measured in the same run.
import { assertOk, runTimed, settle } from '../lib/proc.mjs';
import { scratchDir } from '../lib/scratch.mjs';
import { Figure } from '../lib/stats.mjs';

export async function startup(ctx) {
  ctx.report.section('Cold start: `--version`, spawn → exit');
  const home = scratchDir('startup-home');
  const bareOf = new Map();
  for (const agent of ctx.agents) {
    if (!bareOf.has(agent.node)) bareOf.set(agent.node, await ctx.baseline(agent.node));
  }
  const env = { PATH: process.env.PATH, HOME: home };
  const samples = new Map(ctx.agents.map((agent) => [agent.id, []]));
  for (const agent of ctx.agents) await versionOf(agent, env); // warm the page cache
  // Interleaved so that a change of machine load hits every agent alike.
  for (let i = 0; i < ctx.cheapRuns; i++) {
    await settle();
    for (const agent of ctx.agents) samples.get(agent.id).push(await versionOf(agent, env));
  }
  for (const agent of ctx.agents) {
    const bare = bareOf.get(agent.node);
    const figure = new Figure(`startup/version/${agent.id}`, 'ms', samples.get(agent.id), { note: agent.label });
    ctx.report.add(figure.compare(bare.label, bare, { difference: true }));
  }
}

async function versionOf(agent, env) {
  const result = assertOk(
    await runTimed(agent.node, agent.versionArgv(), { env, cwd: env.HOME }),
    `${agent.id} --version`,
  );
  return result.ms;
}
