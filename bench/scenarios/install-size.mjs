// Disk taken by an install. Ours: the package's own files (bin, dist, skills, templates) plus node_modules from
// `npm ci --omit=dev --omit=optional` (core) and `npm ci --omit=dev` (full: with the optional channel SDKs), in a
// scratch copy of package.json + package-lock.json (install scripts off; dist/ is the current build). Quick mode does
// not install: it adds up the same package set from this checkout's node_modules (`npm ls --parseable`). Peers: their
// bench/.peers install (OpenClaw's Node 24 runtime listed apart). Sizes are `du -sk`, one measurement each.
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { diskUsageMb, peerDir } from '../lib/peers.mjs';
import { scratchDir } from '../lib/scratch.mjs';
import { Figure, formatValue } from '../lib/stats.mjs';

const run = promisify(execFile);
const OWN_FILES = ['bin', 'dist', 'skills', 'templates'];

export async function installSize(ctx) {
  ctx.report.section('Install size on disk');
  const own = await duTotal(OWN_FILES.map((f) => join(ctx.root, f)));
  const how = ctx.quick ? 'estimated from this checkout (npm ls)' : 'npm ci in a scratch folder';
  const core = own + (await modulesMb(ctx, ['--omit=dev', '--omit=optional']));
  const full = own + (await modulesMb(ctx, ['--omit=dev']));
  const note = `${how}; package files ${formatValue(own, 'MB')}`;
  const coreFigure = new Figure('install/core/ours', 'MB', [core], { note });
  const fullFigure = new Figure('install/full/ours', 'MB', [full], { note: 'with the optional channel SDKs' });
  const peers = [];
  for (const agent of ctx.agents.filter((a) => a.id !== 'ours')) {
    const size = await diskUsageMb(join(peerDir(agent.id), 'node_modules'));
    const runtime = agent.id === 'openclaw' ? await diskUsageMb(join(peerDir('node24'), 'node_modules')) : 0;
    const extra = runtime ? `; + ${formatValue(runtime, 'MB')} for the Node 24 it needs` : '';
    peers.push(new Figure(`install/${agent.id}`, 'MB', [size], { note: `npm install of ${agent.label}${extra}` }));
  }
  for (const peer of peers) {
    coreFigure.compare(peer.id.split('/')[1], peer);
    fullFigure.compare(peer.id.split('/')[1], peer);
  }
  for (const figure of [coreFigure, fullFigure, ...peers]) ctx.report.add(figure);
}

async function duTotal(paths) {
  if (paths.length === 0) return 0; // du with no paths would measure the current folder
  const { stdout } = await run('du', ['-skc', '--exclude=node_modules', ...paths], { maxBuffer: 16 * 1024 * 1024 });
  return Number(stdout.trim().split('\n').at(-1).split('\t')[0]) / 1024;
}

/** node_modules for `npm ci <omit…>`: installed for real, or (quick) summed from the checkout's packages. */
async function modulesMb(ctx, omit) {
  if (ctx.quick) {
    const { stdout } = await run('npm', ['ls', ...omit, '--all', '--parseable'], {
      cwd: ctx.root,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((err) => ({ stdout: err.stdout ?? '' })); // npm ls exits 1 on extraneous packages but still lists
    const packages = stdout.split('\n').filter((p) => p.includes(`${join('node_modules', '')}`));
    return duTotal(packages);
  }
  const dir = scratchDir('install');
  copyFileSync(join(ctx.root, 'package.json'), join(dir, 'package.json'));
  copyFileSync(join(ctx.root, 'package-lock.json'), join(dir, 'package-lock.json'));
  await run('npm', ['ci', ...omit, '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: dir,
    maxBuffer: 64 * 1024 * 1024,
    timeout: 15 * 60_000,
  });
  // npm creates no node_modules when there is nothing to install (the core has no runtime dependencies).
  const modules = join(dir, 'node_modules');
  return existsSync(modules) ? diskUsageMb(modules) : 0;
}
