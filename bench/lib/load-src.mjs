// Benches import project modules straight from src/: esbuild bundles the given exports into a scratch file,
// so no build step is needed and the measured code is the code under test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Bundles `exportLines` (like "export { X } from './src/…/x.js';", relative to the repository root); returns the file,
 * which is removed when this process exits.
 */
export async function bundleFromSource(exportLines, name = 'bench') {
  const dir = mkdtempSync(join(tmpdir(), `nb-${name}-`));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const outfile = join(dir, `${name}.mjs`);
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
  return outfile;
}

export async function loadFromSource(exportLines, name = 'bench') {
  return import(pathToFileURL(await bundleFromSource(exportLines, name)).href);
}

/** What bench/lib/bus-gateway.mjs runs: the gateway's core without channels. */
export const BUS_GATEWAY_MODULES = [
  "export { MessageBus } from './src/bus/message-bus.js';",
  "export { Dispatcher } from './src/gateway/dispatcher.js';",
  "export { AgentLoop } from './src/agent/loop.js';",
  "export { AgentRunner } from './src/agent/runner.js';",
  "export { ContextBuilder } from './src/agent/context.js';",
  "export { JsonlSessionStore } from './src/session/jsonl-store.js';",
  "export { newSession } from './src/session/types.js';",
  "export { ToolRegistry } from './src/tools/registry.js';",
  "export { EventStream } from './src/util/event-stream.js';",
];
