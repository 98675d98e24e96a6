// Bundles the CLI into dist/ with esbuild. One bundle (split at the lazy `import()`s) starts several times faster
// than thousands of small modules: the Anthropic SDK alone takes ~400 ms to load file by file on Node 20.
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import ts from 'typescript';
import { buildWebUi } from './build-webui.mjs';
import { cjsFacade } from './cjs-facade.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** zod re-exports all ~60 of its error-message locales; nanobot only uses English, so the rest are not bundled. */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${join('node_modules', 'zod')}`)
        ? { path: 'zod-locales', namespace: 'zod-locales' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, () => ({
      contents: "export { default as en } from 'zod/v4/locales/en.js';",
      resolveDir: root,
    }));
  },
};
/** node-fetch's Blob falls back to a web-streams polyfill on runtimes without node:stream/web; Node 20 has it. */
const noStreamsPolyfill = {
  name: 'no-web-streams-polyfill',
  setup(b) {
    b.onResolve({ filter: /^web-streams-polyfill(\/|$)/ }, () => ({
      path: 'web-streams-polyfill',
      namespace: 'empty',
    }));
    b.onLoad({ filter: /.*/, namespace: 'empty' }, () => ({
      contents: "throw new Error('node:stream/web is missing: nanobot needs Node 20 or later');",
    }));
  },
};
/**
 * The OpenAI and Anthropic SDKs run on node-fetch (src/providers/http.ts), so they get node-fetch's Headers and
 * FormData classes too. Touching Node's global ones would load all of Node's built-in fetch (~15 ms at every start)
 * for two classes the SDKs only use to build and check request headers and bodies.
 */
const sdkFetchClasses = {
  name: 'sdk-fetch-classes',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/](openai|@anthropic-ai[\\/]sdk)[\\/].*\.mjs$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!/\b(Headers|FormData)\b/.test(source)) return undefined;
      return {
        contents: `import { FormData, Headers } from 'node-fetch';\n${source}`,
        loader: 'js',
        resolveDir: dirname(args.path),
      };
    });
  },
};
// Build beside dist/ and swap it in, so a concurrent test run never sees a half-written bundle.
const staging = join(root, `dist.tmp-${process.pid}`);
const retired = join(root, `dist.old-${process.pid}`);
const { metafile } = await build({
  absWorkingDir: root,
  // The CLI, and the embedding API (`import { createNanobot } from 'nanobot-ts'`); they share chunks.
  entryPoints: { main: 'src/cli/main.ts', sdk: 'src/sdk.ts' },
  outdir: staging,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'bundle',
  // Chat-platform SDKs (and Bedrock's) are installed on demand (src/util/on-demand.ts): each is imported when its
  // channel starts, from next to the package or from ~/.nanobot/packages. The Matrix crypto's wasm package is one of
  // them (pinned to matrix-js-sdk's own), so there is one copy of it, with its .wasm file beside it.
  external: Object.keys(pkg.onDemandDependencies ?? {}),
  chunkNames: 'chunks/[name]-[hash]',
  // Bundled CommonJS dependencies call require() for Node built-ins.
  banner: {
    js: "import { createRequire as __nanobotRequire } from 'node:module'; const require = __nanobotRequire(import.meta.url);",
  },
  // cjsFacade first: a lazily imported CommonJS package gets the named exports Node gives it (scripts/cjs-facade.mjs).
  plugins: [cjsFacade, zodEnglishOnly, noStreamsPolyfill, sdkFetchClasses],
  legalComments: 'none',
  minify: process.env.NANOBOT_BUILD_DEBUG !== '1',
  // Error classification looks at SDK error class names; minified names would all read as unknown errors.
  keepNames: true,
  logLevel: 'warning',
  metafile: true,
});
assertNamedExports(metafile);
writeSdkDeclarations(join(staging, 'sdk.d.ts'));
// The WebUI the WebSocket channel serves (Vite runs only when webui/ changed).
await buildWebUi(join(staging, 'webui'));
try {
  renameSync(join(root, 'dist'), retired);
} catch {
  // First build: there is no dist/ yet.
}
renameSync(staging, join(root, 'dist'));
rmSync(retired, { recursive: true, force: true });

/**
 * A lazy chunk of a dependency that exports only `default` is a CommonJS package the facade missed: under Node its
 * named exports exist, in dist/ they would be undefined. Fail the build instead of shipping that.
 */
function assertNamedExports(meta) {
  const lost = Object.entries(meta.outputs).filter(
    ([, out]) => out.entryPoint?.includes('node_modules') && out.exports.length === 1 && out.exports[0] === 'default',
  );
  if (lost.length > 0) {
    const which = lost.map(([file, out]) => `${out.entryPoint} (${file})`).join(', ');
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`lazily imported CommonJS without named exports: ${which}; see scripts/cjs-facade.mjs`);
  }
}

/**
 * dist/sdk.d.ts for the package's `types`. src/sdk.ts spells out every type it exports (isolated declarations), so
 * the file is emitted on its own, without type-checking the program behind it.
 */
function writeSdkDeclarations(target) {
  const source = readFileSync(join(root, 'src', 'sdk.ts'), 'utf8');
  const { outputText, diagnostics } = ts.transpileDeclaration(source, {
    fileName: 'sdk.ts',
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.Node16, isolatedDeclarations: true },
    reportDiagnostics: true,
  });
  if (diagnostics?.length) {
    const messages = diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    throw new Error(`src/sdk.ts needs explicit types on its exports:\n${messages.join('\n')}`);
  }
  // The implementation's imports are not part of the public types.
  writeFileSync(target, outputText.replace(/^import .*\n/gm, ''));
}
