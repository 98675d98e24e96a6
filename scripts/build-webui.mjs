// Builds the WebUI (webui/, React + Vite) and copies it to `<target>` (dist/webui), which the WebSocket channel
// serves. Vite runs only when the sources changed: each build is cached under node_modules/.cache/nanobot-webui/
// by a hash of its inputs, so concurrent builds never write into the same folder.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const webuiDir = join(root, 'webui');
const cacheRoot = join(root, 'node_modules', '.cache', 'nanobot-webui');
const KEEP_CACHED = 4;

/** Every file that shapes the bundle: the app, the shared protocol types, this script and the locked dependencies. */
function inputsHash() {
  const files = [
    ...listFiles(webuiDir).filter((file) => !relative(webuiDir, file).startsWith('dist')),
    join(root, 'src', 'channels', 'websocket', 'frames.ts'),
    fileURLToPath(import.meta.url),
    join(root, 'package-lock.json'),
  ].filter((file) => existsSync(file));
  const hash = createHash('sha256');
  for (const file of files.sort()) {
    hash.update(relative(root, file));
    hash.update(readFileSync(file));
  }
  return hash.digest('hex').slice(0, 16);
}

function listFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' ? [] : listFiles(path);
    return [path];
  });
}

export async function buildWebUi(target) {
  if (!existsSync(join(webuiDir, 'index.html'))) return;
  const cached = join(cacheRoot, inputsHash());
  if (!existsSync(join(cached, 'index.html'))) {
    const staging = `${cached}.tmp-${process.pid}`;
    const [{ build }, { default: react }] = await Promise.all([import('vite'), import('@vitejs/plugin-react')]);
    // The React plugin picks its JSX runtime from NODE_ENV, not from `mode`: under vitest (NODE_ENV=test) it emitted
    // `jsxDEV` calls that the production React below does not have, and the page failed to start.
    const callerEnv = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    await build({
      root: webuiDir,
      base: './',
      configFile: false,
      // React's production build, whatever NODE_ENV the caller has: vitest's global setup runs this with
      // NODE_ENV=test, which gave the tests a development React (StrictMode's doubled effects) users never get.
      mode: 'production',
      define: { 'process.env.NODE_ENV': JSON.stringify('production') },
      plugins: [react()],
      logLevel: 'warn',
      build: { outDir: staging, emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 1024 },
    }).finally(() => {
      if (callerEnv === undefined) delete process.env.NODE_ENV;
      else process.env.NODE_ENV = callerEnv;
    });
    try {
      renameSync(staging, cached);
    } catch {
      // Another build of the same inputs finished first; its output is identical.
      rmSync(staging, { recursive: true, force: true });
    }
    pruneCache(cached);
  }
  cpSync(cached, target, { recursive: true });
}

function pruneCache(current) {
  const entries = readdirSync(cacheRoot)
    .map((name) => join(cacheRoot, name))
    .filter((path) => path !== current && !path.includes('.tmp-'))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  for (const old of entries.slice(KEEP_CACHED - 1)) rmSync(old, { recursive: true, force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildWebUi(join(root, 'dist', 'webui'));
}
