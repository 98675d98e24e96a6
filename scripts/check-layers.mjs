#!/usr/bin/env node
/**
 * Fails when a src/ file imports a file in a higher layer (DESIGN.md §2: imports point down only). The layer picture
 * is the table below, as data: a path prefix → layer; the longest matching prefix wins, so single files inside
 * agent/ can sit in a different layer from the folder. Same-layer imports are fine, and the surfaces' entry points
 * (ENTRY_POINTS) may import the wiring above them — nothing else may.
 *
 * Every import form is checked, value and type alike: `import`, `import type`, `export … from`, dynamic `import()`
 * and `typeof import('…')`. A type-only import erases at build time, but it still ties the lower layer's meaning to
 * the upper one (the upward edge the design forbids is one of knowledge, not of load order), so it is refused too.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import ts from 'typescript';

// `--root DIR` checks another tree (the check's own test uses it).
const rootAt = process.argv.indexOf('--root');
const ROOT = rootAt > 0 ? process.argv[rootAt + 1] : join(import.meta.dirname, '..');

const LAYERS = ['foundations', 'capabilities', 'execution', 'orchestration', 'surfaces', 'wiring'];

/** Path under src/ (a folder ends in `/`) → layer. Longest match wins; a file matching nothing is an error. */
const TABLE = {
  'app/': 'wiring',

  'cli/': 'surfaces',
  'gateway/': 'surfaces',
  'api/': 'surfaces',
  'channels/': 'surfaces',
  'webui/': 'surfaces',
  'sdk.ts': 'surfaces',

  // agent/: the loop and what only it uses (commands, follow-ups, recovery, context builder, goals) orchestrate …
  'agent/': 'orchestration',
  // … the runner and what it alone needs execute one turn.
  'agent/runner.ts': 'execution',
  'agent/deadline.ts': 'execution',
  'agent/governor.ts': 'execution',
  'agent/governor-memo.ts': 'execution',
  'agent/governor-pairing.ts': 'execution',
  'agent/prompts.ts': 'execution',
  // Subagents are the spawn tool's back end (a capability to the model, reached only through tools/spawn.ts's
  // Spawner interface), but each one drives a nested AgentRunner, so the file sits with the runner.
  'agent/subagents.ts': 'execution',

  'tools/': 'capabilities',
  'memory/': 'capabilities',
  'skills/': 'capabilities',
  'mcp/': 'capabilities',
  'cron/': 'capabilities',
  'heartbeat/': 'capabilities',
  'triggers/': 'capabilities',

  'providers/': 'foundations',
  'session/': 'foundations',
  'bus/': 'foundations',
  'security/': 'foundations',
  'config/': 'foundations',
  'util/': 'foundations',
  'types/': 'foundations',
};

/**
 * The surfaces' entry points: the only files that may import the wiring (app/), which sits above every surface.
 * `nanobot agent`, `gateway` and `serve` start in cli/commands/; the SDK's createNanobot in sdk.ts.
 */
const ENTRY_POINTS = ['cli/commands/', 'sdk.ts'];

const isEntryPoint = (path) =>
  ENTRY_POINTS.some((entry) => (entry.endsWith('/') ? path.startsWith(entry) : path === entry));

function layerOf(path) {
  let best;
  for (const prefix of Object.keys(TABLE)) {
    const hit = prefix.endsWith('/') ? path.startsWith(prefix) : path === prefix;
    if (hit && (best === undefined || prefix.length > best.length)) best = prefix;
  }
  return best === undefined ? undefined : TABLE[best];
}

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (/\.(?:ts|tsx|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path;
  }
}

/** Every relative module specifier in the file, with its line and whether the import is type-only. */
function importsOf(file, text) {
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const found = [];
  const add = (literal, typeOnly) => {
    if (!literal || !ts.isStringLiteralLike(literal) || !literal.text.startsWith('.')) return;
    const { line } = source.getLineAndCharacterOfPosition(literal.getStart(source));
    found.push({ specifier: literal.text, line: line + 1, typeOnly });
  };
  const visit = (node) => {
    if (ts.isImportDeclaration(node)) add(node.moduleSpecifier, Boolean(node.importClause?.isTypeOnly));
    else if (ts.isExportDeclaration(node)) add(node.moduleSpecifier, node.isTypeOnly);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node.moduleReference.expression, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node.arguments[0], false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node.argument.literal, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `./x.js` from `agent/loop.ts` → `agent/x.ts` (a path under src/), or undefined when it leaves src/. */
function resolveUnderSrc(from, specifier) {
  const joined = normalize(join(dirname(from), specifier))
    .split(sep)
    .join('/');
  if (joined.startsWith('..')) return undefined;
  return joined.replace(/\.(?:m?js|jsx)$/, (ext) => (ext === '.jsx' ? '.tsx' : ext === '.mjs' ? '.mts' : '.ts'));
}

const SRC = join(ROOT, 'src');
const problems = [];
let files = 0;
let edges = 0;
for (const full of sourceFiles(SRC)) {
  files += 1;
  const file = relative(SRC, full).split(sep).join('/');
  const fromLayer = layerOf(file);
  if (fromLayer === undefined) {
    problems.push(`src/${file}: is in no layer; add its folder to the table in scripts/check-layers.mjs`);
    continue;
  }
  for (const { specifier, line, typeOnly } of importsOf(file, readFileSync(full, 'utf8'))) {
    const target = resolveUnderSrc(file, specifier);
    if (target === undefined) continue;
    edges += 1;
    const toLayer = layerOf(target);
    if (toLayer === undefined || LAYERS.indexOf(toLayer) <= LAYERS.indexOf(fromLayer)) continue;
    if (toLayer === 'wiring' && isEntryPoint(file)) continue;
    problems.push(
      `src/${file}:${line}: imports ${typeOnly ? 'types from ' : ''}src/${target}, which points up: ` +
        `${fromLayer} (src/${file}) must not import ${toLayer} (src/${target}); ` +
        (toLayer === 'wiring'
          ? `only the entry points (${ENTRY_POINTS.join(', ')}) may import app/; take what you need as a parameter`
          : 'move the shared part down a layer or pass it in from above'),
    );
  }
}
if (problems.length > 0) {
  for (const problem of problems) console.error(`check-layers: ${problem}`);
  process.exit(1);
}
console.log(`check-layers: ok (${files} files, ${edges} imports, none points up)`);
