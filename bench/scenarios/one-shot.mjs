// One-shot turns (`agent -m`, OpenClaw `agent exec`) against an instant fake LLM, spawn → exit, with peak RSS:
// a turn with no tool, and a turn with two tool calls (two rounds of one directory listing each). Also spawn →
// first LLM request. Each agent keeps one home (its first, warm-up run bootstraps the workspace); every run uses a
// new session so history does not grow. Runs are interleaved across agents.
import { spawnFakeLLM } from '../lib/llm.mjs';
import { assertOk, runTimed, settle } from '../lib/proc.mjs';
import { Figure } from '../lib/stats.mjs';

const KINDS = [
  ['no-tool', 0],
  ['two-tools', 2],
];

export async function oneShot(ctx) {
  ctx.report.section('One-shot turn, instant fake LLM: spawn → exit');
  const llm = await spawnFakeLLM();
  try {
    const setups = [];
    for (const agent of ctx.agents) {
      const setup = { agent, h: await agent.home(llm.url), samples: new Map() };
      setups.push(setup);
      await guarded(setup, () => turn(llm, setup, 'warm', 0));
    }
    for (let i = 0; i < ctx.runs; i++) {
      for (const setup of setups) {
        for (const [kind, tools] of KINDS) {
          await guarded(setup, async () => {
            const result = await turn(llm, setup, `o${i}-${kind}`, tools);
            push(setup, kind, result.ms);
            push(setup, `${kind}/peak-rss`, result.peakRssMb);
            if (tools === 0) push(setup, 'first-request', result.firstRequestMs);
          });
        }
      }
    }
    const bare = new Map();
    for (const { agent } of setups) bare.set(agent.id, await ctx.baseline(agent.node));
    report(ctx, setups, bare);
  } finally {
    await llm.close();
  }
}

async function guarded(setup, task) {
  if (setup.error) return;
  try {
    await task();
  } catch (err) {
    setup.error = err.message;
  }
}

function push(setup, key, value) {
  if (!setup.samples.has(key)) setup.samples.set(key, []);
  setup.samples.get(key).push(value);
}

/** One turn; checks the agent printed the reply and made one LLM request per tool round plus the last one. */
async function turn(llm, { agent, h }, id, tools) {
  await llm.clear();
  await settle();
  const { argv } = agent.oneShot(h, `bench ${id} tools=${tools}`, `bench-${id}`);
  const result = assertOk(await runTimed(agent.node, argv, { env: h.env, cwd: h.cwd }), `${agent.id} one-shot turn`);
  const requests = (await llm.requests()).filter((r) => r.id === id);
  if (!result.stdout.includes(`echo ${id}`)) {
    throw new Error(`the answer "echo ${id}" is not in its output: ${result.stdout.slice(-300)}`);
  }
  if (requests.length !== tools + 1) {
    throw new Error(`${tools} tool calls should take ${tools + 1} LLM requests; it made ${requests.length}`);
  }
  return { ...result, firstRequestMs: requests[0].at - result.startEpoch };
}

/** `bare`: agent id → the `node -e ""` figure of the Node that agent runs on. */
function report(ctx, setups, bare) {
  const ours = setups.find((s) => s.agent.id === 'ours');
  const figures = new Map();
  for (const key of ['no-tool', 'no-tool/peak-rss', 'two-tools', 'two-tools/peak-rss', 'first-request']) {
    for (const setup of setups) {
      const id =
        key === 'first-request' ? `one-shot/first-request/${setup.agent.id}` : `one-shot/${key}/${setup.agent.id}`;
      if (setup.error) {
        if (key === 'no-tool') ctx.report.skip(`one-shot/${setup.agent.id}`, `failed: ${setup.error}`);
        continue;
      }
      const unit = key.endsWith('peak-rss') ? 'MB' : 'ms';
      const figure = new Figure(id, unit, setup.samples.get(key) ?? []);
      const base = bare.get(setup.agent.id);
      if (unit === 'ms' && key !== 'first-request') figure.compare(base.label, base, { difference: true });
      figures.set(`${key}/${setup.agent.id}`, figure);
    }
    const mine = figures.get(`${key}/ours`);
    for (const setup of setups) {
      const figure = figures.get(`${key}/${setup.agent.id}`);
      if (!figure) continue;
      if (setup !== ours && mine) mine.compare(setup.agent.id, figure);
    }
    for (const setup of setups) {
      const figure = figures.get(`${key}/${setup.agent.id}`);
      if (figure) ctx.report.add(figure);
    }
  }
}
