// esbuild, splitting at a lazy `import('pkg')` of a CommonJS package, makes that chunk `export default
// module.exports` and nothing else, while Node (running src/) also exposes the named exports. So
// `const { Agent } = await import('undici')` works in the tests and fails in dist/ ("h is not a constructor").
// This plugin puts an ES module in front of every lazily imported CommonJS package that exports exactly what Node's
// own loader exports for it (the names it finds, plus `default`), so every such import behaves the same in both.
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const NAMESPACE = 'cjs-facade';
const builtins = new Set(builtinModules);

/** @type {import('esbuild').Plugin} */
export const cjsFacade = {
  name: 'cjs-facade',
  setup(b) {
    const external = new Set(b.initialOptions.external ?? []);
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.kind !== 'dynamic-import' || args.pluginData?.[NAMESPACE]) return undefined;
      if (args.path.startsWith('node:') || builtins.has(args.path) || external.has(packageName(args.path))) {
        return undefined;
      }
      const resolved = await b.resolve(args.path, {
        kind: 'dynamic-import',
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: { [NAMESPACE]: true },
      });
      if (resolved.errors.length > 0 || resolved.external || !isCommonJs(resolved.path)) return undefined;
      return { path: resolved.path, namespace: NAMESPACE, pluginData: { specifier: args.path } };
    });
    b.onLoad({ filter: /.*/, namespace: NAMESPACE }, async (args) => {
      // The names Node's loader gives this module (its cjs-module-lexer scan), so dist/ matches src/ exactly.
      const names = Object.keys(await import(pathToFileURL(args.path).href)).filter((n) => n !== 'default');
      const lines = [`const m = require(${JSON.stringify(args.path)});`, 'export default m;'];
      names.forEach((name, i) => {
        lines.push(`const n${i} = m[${JSON.stringify(name)}];`, `export { n${i} as ${JSON.stringify(name)} };`);
      });
      return { contents: lines.join('\n'), loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

function packageName(specifier) {
  return specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
}

/** Node's rule: .cjs is CommonJS, .mjs is not, .js follows the nearest package.json's "type". */
function isCommonJs(file) {
  if (file.endsWith('.cjs')) return true;
  if (!file.endsWith('.js')) return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    try {
      return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).type !== 'module';
    } catch (error) {
      if (error?.code !== 'ENOENT') throw error;
    }
    if (dirname(dir) === dir) return true;
  }
}
