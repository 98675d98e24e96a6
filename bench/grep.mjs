// Search benchmark: grep and find_files on a generated 50k-file tree, as ratios to GNU `grep -rl` / `find`.
// Usage: node bench/grep.mjs [files=50000] [runs=5]
// The tools are TypeScript, so they are bundled on the fly with esbuild (no `npm run build` needed).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadFromSource } from './load-src.mjs';

const _root = join(dirname(fileURLToPath(import.meta.url)), '..');
const fileCount = Number(process.argv[2] ?? 50_000);
const runs = Number(process.argv[3] ?? 5);
const scratch = mkdtempSync(join(tmpdir(), 'nb-grep-bench-'));

async function loadTools() {
  return loadFromSource(
    [
      "export { createGrepTool, createFindFilesTool } from './src/tools/search/index.js';",
      "export { createPathPolicy } from './src/security/workspace.js';",
    ],
    'grep',
  );
}

/** 50 top dirs × 20 subdirs × N files of ~1 KB; 1 in 100 holds the rare needle; plus ignored noise. */
function makeTree(workspace) {
  const perDir = Math.max(1, Math.ceil(fileCount / 1000));
  const filler = Array.from({ length: 20 }, (_, i) => `line ${i} the quick brown fox jumps over the lazy dog`).join(
    '\n',
  );
  let made = 0;
  for (let a = 0; a < 50 && made < fileCount; a++) {
    for (let b = 0; b < 20 && made < fileCount; b++) {
      const dir = join(workspace, `pkg${a}`, `mod${b}`);
      mkdirSync(dir, { recursive: true });
      for (let c = 0; c < perDir && made < fileCount; c++, made++) {
        const rare = made % 100 === 0 ? '\nconst RARE_NEEDLE_TOKEN = 1;' : '';
        writeFileSync(join(dir, `file${c}.ts`), `${filler}${rare}\n`);
      }
    }
  }
  mkdirSync(join(workspace, 'node_modules', 'dep'), { recursive: true });
  writeFileSync(join(workspace, 'node_modules', 'dep', 'index.js'), 'RARE_NEEDLE_TOKEN\n');
  writeFileSync(join(workspace, '.gitignore'), 'build/\n');
  return made;
}

async function time(label, fn) {
  const samples = [];
  let output = await fn(); // warm-up (JIT, page cache), not timed
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    output = await fn();
    samples.push(performance.now() - start);
  }
  samples.sort((x, y) => x - y);
  return { label, ms: samples[Math.floor(samples.length / 2)], output };
}

const tools = await loadTools();
const workspace = join(scratch, 'ws');
mkdirSync(workspace);
const made = makeTree(workspace);
const policy = tools.createPathPolicy({ workspace, restrictToWorkspace: true });
const grep = tools.createGrepTool({ policy });
const find = tools.createFindFilesTool({ policy });
const ctx = { signal: new AbortController().signal };
const text = (result) => (typeof result.content === 'string' ? result.content : '');
const lines = (output) => output.split('\n').filter((line) => line && !line.startsWith('(')).length;

const results = [
  await time('GNU grep -rl (baseline)', () =>
    execFileSync('grep', ['-rl', '--exclude-dir=node_modules', '--exclude-dir=.git', 'RARE_NEEDLE_TOKEN', workspace], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    }),
  ),
  await time('grep files_with_matches, all', async () =>
    text(await grep.execute({ pattern: 'RARE_NEEDLE_TOKEN', head_limit: 0 }, ctx)),
  ),
  await time('grep content, all', async () =>
    text(await grep.execute({ pattern: 'RARE_NEEDLE_TOKEN', output_mode: 'content', head_limit: 0 }, ctx)),
  ),
  await time('grep files_with_matches, default page (early stop)', async () =>
    text(await grep.execute({ pattern: 'lazy dog' }, ctx)),
  ),
  await time('find -name (baseline)', () =>
    execFileSync('find', [workspace, '-name', '*file1*', '-not', '-path', '*/node_modules/*'], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    }),
  ),
  await time('find_files query, all', async () => text(await find.execute({ query: 'file1', head_limit: 0 }, ctx))),
  await time('find_files glob, default page', async () => text(await find.execute({ glob: '**/mod1/*.ts' }, ctx))),
];

const grepBase = results[0].ms;
const findBase = results[4].ms;
console.log(`${made} files, median of ${runs} runs`);
for (const [index, result] of results.entries()) {
  const base = index < 4 ? grepBase : findBase;
  const ratio = (result.ms / base).toFixed(1);
  console.log(
    `${result.label.padEnd(52)} ${result.ms.toFixed(0).padStart(6)} ms  ×${ratio}  (${lines(result.output)} lines)`,
  );
}
rmSync(scratch, { recursive: true, force: true });
