// Summarises V8 CPU profiles (from `node bench/run.mjs --profile=DIR`, or any `node --cpu-prof`): where the time of
// each profile goes, by function (self time) and by source file or package, and the total across the profiles.
// Usage: node bench/profile-summary.mjs DIR_OR_FILE… [--top=N] [--inclusive]
// --inclusive also lists functions by total time (their own plus everything they called): the phases of a run.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const top = Number(process.argv.find((a) => a.startsWith('--top='))?.slice(6) ?? 15);
const inclusive = process.argv.includes('--inclusive');
const inputs = process.argv.slice(2).filter((a) => !a.startsWith('--'));
if (inputs.length === 0) {
  process.stderr.write('usage: node bench/profile-summary.mjs DIR_OR_FILE… [--top=N]\n');
  process.exit(2);
}

function profilesIn(path) {
  if (statSync(path).isFile()) return [path];
  return readdirSync(path, { withFileTypes: true }).flatMap((entry) => {
    const full = join(path, entry.name);
    if (entry.isDirectory()) return profilesIn(full);
    return entry.name.endsWith('.cpuprofile') ? [full] : [];
  });
}

/** "node_modules/<pkg>", "dist/chunks/x.js", "node:internal/…", or "(program)"/"(gc)"/"(idle)". */
function moduleOf(url, name) {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const rest = path.slice(modules + 'node_modules/'.length).split('/');
    return `node_modules/${rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (path.startsWith('node:')) return path.split('/').slice(0, 2).join('/');
  return path.split('/').slice(-2).join('/');
}

const nameOf = (node) => {
  const { functionName, url, lineNumber } = node.callFrame;
  return `${functionName || '(anonymous)'} ${moduleOf(url, functionName)}:${lineNumber + 1}`;
};

/** Total time per function: each sample counts once for every distinct function on its stack. */
function inclusiveTimes(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const totals = new Map();
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const node = byId.get(at);
      if (!node || node.callFrame.functionName === '(root)') continue;
      const name = nameOf(node);
      if (seen.has(name)) continue;
      seen.add(name);
      totals.set(name, (totals.get(name) ?? 0) + ms);
    }
  });
  return totals;
}

/** Self time per node from the samples and their time deltas, in ms. */
function selfTimes(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return [...self].map(([id, ms]) => ({ node: byId.get(id), ms }));
}

const total = { functions: new Map(), modules: new Map(), inclusive: new Map(), ms: 0 };
const add = (map, key, ms) => map.set(key, (map.get(key) ?? 0) + ms);
const print = (title, map, all) => {
  process.stdout.write(`  ${title}\n`);
  for (const [key, ms] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`    ${ms.toFixed(1).padStart(9)} ms ${((100 * ms) / all).toFixed(1).padStart(5)}%  ${key}\n`);
  }
};

const files = inputs.flatMap(profilesIn);
for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const functions = new Map();
  const modules = new Map();
  let ms = 0;
  for (const { node, ms: t } of selfTimes(profile)) {
    const { functionName, url } = node.callFrame;
    add(functions, nameOf(node), t);
    add(modules, moduleOf(url, functionName), t);
    add(total.functions, nameOf(node), t);
    add(total.modules, moduleOf(url, functionName), t);
    ms += t;
  }
  const totals = inclusive ? inclusiveTimes(profile) : new Map();
  for (const [name, t] of totals) add(total.inclusive, name, t);
  total.ms += ms;
  if (files.length <= 3) {
    process.stdout.write(`\n${file}: ${ms.toFixed(0)} ms sampled\n`);
    print('by module', modules, ms);
    print('by function (self time)', functions, ms);
    if (inclusive) print('by function (total time)', totals, ms);
  }
}
if (files.length > 3 || files.length === 0) {
  process.stdout.write(`\n${files.length} profiles, ${total.ms.toFixed(0)} ms sampled in all\n`);
  print('by module', total.modules, total.ms);
  print('by function (self time)', total.functions, total.ms);
  if (inclusive) print('by function (total time)', total.inclusive, total.ms);
}
