// The benchmark: nanobot-ts side by side with its peers (nanobot on npm, OpenClaw) on the same work, in the same run.
//
//   npm run bench                      full run with peers; writes bench/RESULTS.md
//   node bench/run.mjs --quick --no-peers   CI smoke: small workloads, ~1 minute, nothing written
//
// Options: --quick, --no-peers, --runs=N (≥ 5 for figures you publish), --only=a,b / --skip=a,b (scenario names
// below), --idle-minutes=M (default 10; quick 0.05), --profile=DIR (our processes run with --cpu-prof into DIR/<tag>;
// summarise with `node bench/profile-summary.mjs DIR`), --results=PATH, --no-build, --think=MS (gateway scenarios:
// each user pauses MS between a reply and their next message, first messages spread over MS; default 0 = lockstep).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nanobotAgent } from './agents/nanobot.mjs';
import { openclawAgent } from './agents/openclaw.mjs';
import { oursAgent } from './agents/ours.mjs';
import { preparePeers } from './lib/peers.mjs';
import { assertOk, descendantsOf, runTimed, settle } from './lib/proc.mjs';
import { loadAverage, machineHeader, Report } from './lib/report.mjs';
import { removeScratch } from './lib/scratch.mjs';
import { Figure } from './lib/stats.mjs';
import { api } from './scenarios/api.mjs';
import { firstRequest } from './scenarios/first-request.mjs';
import { gatewayBus } from './scenarios/gateway-bus.mjs';
import { gatewayWs } from './scenarios/gateway-ws.mjs';
import { idle } from './scenarios/idle.mjs';
import { installSize } from './scenarios/install-size.mjs';
import { oneShot } from './scenarios/one-shot.mjs';
import { requestBuild } from './scenarios/request-build.mjs';
import { search } from './scenarios/search.mjs';
import { startup } from './scenarios/startup.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SCENARIOS = {
  startup,
  'one-shot': oneShot,
  'first-request': firstRequest,
  'request-build': requestBuild,
  api,
  'gateway-ws': gatewayWs,
  'gateway-bus': gatewayBus,
  search,
  install: installSize,
  idle,
};

function parseOptions(argv) {
  const value = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const list = (name) => value(name)?.split(',').filter(Boolean);
  const quick = argv.includes('--quick');
  const options = {
    quick,
    peers: !argv.includes('--no-peers'),
    runs: Number(value('runs') ?? 5),
    only: list('only'),
    skip: list('skip') ?? [],
    idleMinutes: Number(value('idle-minutes') ?? (quick ? 0.05 : 10)),
    thinkMs: Number(value('think') ?? 0),
    profileDir: value('profile') ? resolve(value('profile')) : undefined,
    build: !argv.includes('--no-build'),
  };
  const results = value('results');
  options.results = results ? resolve(results) : quick || options.only ? undefined : join(root, 'bench', 'RESULTS.md');
  for (const name of [...(options.only ?? []), ...options.skip]) {
    if (!SCENARIOS[name]) throw new Error(`unknown scenario "${name}"; known: ${Object.keys(SCENARIOS).join(', ')}`);
  }
  if (!Number.isInteger(options.runs) || options.runs < 1) throw new Error('--runs must be a whole number ≥ 1');
  return options;
}

/** Rebuilds dist/ when a source file is newer than the bundle, so the bench measures the code in src/. */
function ensureBuilt() {
  const bundle = join(root, 'dist', 'main.js');
  const newest = (dir) =>
    readdirSync(dir, { withFileTypes: true }).reduce((max, entry) => {
      const path = join(dir, entry.name);
      return Math.max(max, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
    }, 0);
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= newest(join(root, 'src'))) return;
  process.stdout.write('building dist/ (npm run build) …\n');
  execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
}

/** Interrupted: end the servers, agents and fake LLM this run started (its descendants, by pid), then exit. */
function stopOnSignal(signal) {
  process.once(signal, () => {
    for (const pid of descendantsOf(process.pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    removeScratch();
    process.exit(130);
  });
}

async function main() {
  stopOnSignal('SIGINT');
  stopOnSignal('SIGTERM');
  const options = parseOptions(process.argv.slice(2));
  if (options.build) ensureBuilt();
  const report = new Report();
  const header = machineHeader(root);
  const loadAtStart = loadAverage();
  for (const [key, value] of Object.entries(header)) report.print(`${key}: ${value}`);
  report.print(`Load average (1/5/15 min): ${loadAtStart}`);
  report.print(`Mode: ${options.quick ? 'quick' : 'full'}, ${options.runs} runs per figure (median, min, max)`);

  const ours = oursAgent({ root, profileDir: options.profileDir });
  const agents = [ours];
  report.section('Peers');
  if (!options.peers) {
    report.skip('peers/nanobot', '--no-peers');
    report.skip('peers/openclaw', '--no-peers');
  } else {
    const peers = await preparePeers({ log: (line) => report.print(line) });
    for (const [name, make] of [
      ['nanobot', nanobotAgent],
      ['openclaw', openclawAgent],
    ]) {
      if (peers[name].ok) {
        agents.push(make(peers[name]));
        report.note(`${agents.at(-1).label}: ready`);
      } else report.skip(`peers/${name}`, peers[name].reason);
    }
  }
  report.endSection();

  const baselines = new Map();
  const ctx = {
    ...options,
    root,
    report,
    ours,
    agents,
    /** Runs for measurements that take well under a second: more samples, steadier medians on a busy machine. */
    cheapRuns: options.quick ? options.runs : Math.max(options.runs, 15),
    /** `node -e ""` of that binary, measured once per bench run (the first scenario that needs it adds the line). */
    async baseline(node) {
      if (!baselines.has(node)) {
        const major = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim().split('.')[0].slice(1);
        const own = node === process.execPath;
        const samples = [];
        await settle();
        await runTimed(node, ['-e', '']);
        for (let i = 0; i < ctx.cheapRuns; i++) samples.push(assertOk(await runTimed(node, ['-e', '']), 'node').ms);
        const figure = new Figure(own ? 'startup/bare-node' : `startup/bare-node${major}`, 'ms', samples, {
          note: `node -e "" (Node ${major})`,
        });
        figure.label = own ? 'bare node' : `bare node ${major}`;
        baselines.set(node, report.add(figure));
      }
      return baselines.get(node);
    },
  };

  let failed = false;
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    if ((options.only && !options.only.includes(name)) || options.skip.includes(name)) continue;
    try {
      await scenario(ctx);
    } catch (err) {
      failed = true;
      report.skip(`scenario/${name}`, `failed: ${err.stack ?? err.message}`);
    }
    report.endSection();
  }
  const rows = report.printTargets(options.quick);
  const loadAtEnd = loadAverage();
  report.print(`\nLoad average at end: ${loadAtEnd}`);
  if (options.results) {
    const mode = options.quick ? 'quick' : `full (idle ${options.idleMinutes} min)`;
    const loads = [loadAtStart, loadAtEnd, ...report.sections.map((s) => s.load)];
    const busiest = Math.max(...loads.map((l) => Number(l.split(' / ')[0])));
    if (busiest > os.cpus().length) {
      header.Caution = `the machine was busy (1-min load up to ${busiest} on ${os.cpus().length} cores): figures are provisional`;
    }
    report.write(
      options.results,
      {
        ...header,
        'Load average (1/5/15 min)': `${loadAtStart} at start, ${loadAtEnd} at end`,
        Mode: `${mode}, ${options.runs} runs per figure`,
      },
      rows,
    );
    report.print(`results written to ${options.results}`);
  }
  removeScratch();
  process.exitCode = failed ? 1 : 0;
}

await main();
