// The grep and find_files tools on a generated tree (50,000 files; quick: 2,000), as ratios to GNU `grep -rl` and
// `find` measured in the same run. The tools are bundled from src/ on the fly.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadFromSource } from '../lib/load-src.mjs';
import { scratchDir } from '../lib/scratch.mjs';
import { Figure } from '../lib/stats.mjs';

export async function search(ctx) {
  const fileCount = ctx.quick ? 2_000 : 50_000;
  ctx.report.section(`Search tools on a ${fileCount.toLocaleString('en-US')}-file tree`);
  const tools = await loadFromSource(
    [
      "export { createGrepTool, createFindFilesTool } from './src/tools/search/index.js';",
      "export { createPathPolicy } from './src/security/workspace.js';",
    ],
    'search',
  );
  const workspace = scratchDir('search-tree');
  makeTree(workspace, fileCount);
  const policy = tools.createPathPolicy({ workspace, restrictToWorkspace: true });
  const grep = tools.createGrepTool({ policy });
  const find = tools.createFindFilesTool({ policy });
  const call = { signal: new AbortController().signal };
  const gnu = (cmd, args) => () => execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const time = async (id, fn) => {
    await fn(); // warm-up: JIT and page cache
    const samples = [];
    for (let i = 0; i < ctx.runs; i++) {
      const start = performance.now();
      await fn();
      samples.push(performance.now() - start);
    }
    return new Figure(`search/${id}`, 'ms', samples);
  };
  const grepBase = await time(
    'gnu-grep-rl',
    gnu('grep', ['-rl', '--exclude-dir=node_modules', '--exclude-dir=.git', 'RARE_NEEDLE_TOKEN', workspace]),
  );
  const findBase = await time(
    'gnu-find',
    gnu('find', [workspace, '-name', '*file1*', '-not', '-path', '*/node_modules/*']),
  );
  const grepFigures = [
    await time('grep/files-all/ours', () => grep.execute({ pattern: 'RARE_NEEDLE_TOKEN', head_limit: 0 }, call)),
    await time('grep/content-all/ours', () =>
      grep.execute({ pattern: 'RARE_NEEDLE_TOKEN', output_mode: 'content', head_limit: 0 }, call),
    ),
    await time('grep/first-page/ours', () => grep.execute({ pattern: 'lazy dog' }, call)),
  ];
  const findFigures = [
    await time('find-files/query-all/ours', () => find.execute({ query: 'file1', head_limit: 0 }, call)),
    await time('find-files/glob-first-page/ours', () => find.execute({ glob: '**/mod1/*.ts' }, call)),
  ];
  ctx.report.add(grepBase);
  for (const f of grepFigures) ctx.report.add(f.compare('GNU grep -rl', grepBase));
  ctx.report.add(findBase);
  for (const f of findFigures) ctx.report.add(f.compare('GNU find', findBase));
}

/** 50 top dirs × 20 subdirs × N files of ~1 KB; 1 in 100 holds the rare needle; plus ignored noise. */
function makeTree(workspace, fileCount) {
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
}
