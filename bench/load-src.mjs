// Benches import project modules straight from src/: esbuild bundles the given exports into a scratch file,
// so no build step is needed and the measured code is the code under test.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** `exportLines`: lines like "export { X } from './src/…/x.js';" (paths relative to the repository root). */
export async function loadFromSource(exportLines, name = 'bench') {
  const outfile = join(mkdtempSync(join(tmpdir(), `nb-${name}-`)), `${name}.mjs`);
  await build({
    absWorkingDir: root,
    stdin: { contents: exportLines.join('\n'), resolveDir: root, loader: 'ts' },
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    banner: { js: "import { createRequire as __r } from 'node:module'; const require = __r(import.meta.url);" },
    logLevel: 'error',
  });
  return import(pathToFileURL(outfile).href);
}
