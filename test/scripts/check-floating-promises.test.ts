/** The `npm run check` guard: a promise chain in src/ whose rejection nobody handles fails the check. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(import.meta.dirname, '..', '..');
const SCRIPT = path.join(ROOT, 'scripts', 'check-floating-promises.mjs');

function run(root: string): { code: number | null; out: string } {
  const result = spawnSync(process.execPath, [SCRIPT, '--root', root], { encoding: 'utf8' });
  return { code: result.status, out: `${result.stdout}${result.stderr}` };
}

/** Checks a tree holding `src/agent/<name>.ts` for each entry. */
function runOn(files: Record<string, string>): { code: number | null; out: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'floating-check-'));
  fs.mkdirSync(path.join(root, 'src', 'agent'), { recursive: true });
  for (const [name, body] of Object.entries(files)) {
    fs.writeFileSync(path.join(root, 'src', 'agent', `${name}.ts`), `${prelude}${body}\n`);
  }
  try {
    return run(root);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

const prelude = `declare const previous: Promise<void>;
declare function work(): Promise<void>;
declare function cleanup(): void;
declare const noop: () => void;
`;

/** Each of these drops a rejection nobody handles. */
const refused: Record<string, string> = {
  'void next.finally (next is a chain that runs a turn)':
    'const next = previous.then(() => work());\nvoid next.finally(() => {\n  cleanup();\n});',
  'void <parameter>.finally': 'export function f(run: Promise<void>) {\n  void run.finally(() => cleanup());\n}',
  'a floating .finally statement': 'const next = previous.then(() => work());\nnext.finally(() => {\n  cleanup();\n});',
  'a floating one-argument .then statement': 'previous.then(() => {\n  cleanup();\n});',
  'a floating .then(…).finally(…) statement': 'previous.then(() => work()).finally(() => cleanup());',
  'void of a function call': 'void work();',
  'void of a method that awaits outside its try':
    'class A {\n  async tick() {\n    await work();\n  }\n  start() {\n    void this.tick();\n  }\n}',
  'void of a method whose catch rethrows':
    'class A {\n  async tick() {\n    try {\n      await work();\n    } catch (e) {\n      throw e;\n    }\n  }\n  start() {\n    void this.tick();\n  }\n}',
  'void inside a timer callback':
    'class A {\n  drain() {\n    return work();\n  }\n  start() {\n    setInterval(() => void this.drain(), 1000);\n  }\n}',
  'void of an async IIFE': 'void (async () => {\n  await work();\n})();',
  'void of a .then whose callback returns a promise': 'void previous.catch(noop).then(() => work());',
  'void of a .finally with an async callback': 'void previous.catch(noop).finally(async () => {\n  await work();\n});',
  'void of a .then with a named callback': 'void previous.catch(noop).then(cleanup);',
  'void through parentheses and as':
    'const next = previous.then(() => work());\nvoid (next as Promise<void>).finally(() => {\n  cleanup();\n});',
  'void through a non-null assertion':
    'let maybe: Promise<void> | undefined;\nvoid maybe!.finally(() => {\n  cleanup();\n});',
  'void of a let binding': 'let pending = work();\nvoid pending;',
  'void of a property': 'class A {\n  pending = work();\n  f() {\n    void this.pending;\n  }\n}',
  'void of a .catch without a handler': 'void previous.catch();',
};

/** Each of these handles the rejection at the site. */
const accepted: Record<string, string> = {
  'void … .catch(handler)': 'void work().catch(() => undefined);',
  'a two-argument .then statement': 'const forget = () => cleanup();\nprevious.then(forget, forget);',
  'void of a quiet .then on a handled const':
    'const tail = previous.then(noop, noop);\nvoid tail.then(() => {\n  cleanup();\n});',
  'void of .finally(…).catch(…)': 'void previous.finally(() => {\n  cleanup();\n}).catch(noop);',
  'void of a quiet .finally on a const that ends in .catch':
    'const next = previous.then(() => work()).catch(noop);\nvoid next.finally(() => {\n  cleanup();\n});',
  'void 0': 'void 0;',
  'void of a method that catches everything':
    'class A {\n  async prune() {\n    try {\n      await work();\n    } catch {\n      // housekeeping\n    }\n  }\n  f() {\n    void this.prune();\n  }\n}',
  'awaited, returned and stored chains':
    'export async function f() {\n  await previous.finally(() => cleanup());\n  const kept = previous.finally(() => cleanup());\n  return kept.finally(() => cleanup());\n}',
  'a floating .catch statement': 'previous.catch(noop);',
};

const fileName = (index: number) => `case-${index}`;

describe('check-floating-promises', () => {
  it('passes on the tree as it is', () => {
    expect(run(ROOT)).toMatchObject({ code: 0 });
  });

  // One run over all planted files (each is a node process that loads the TypeScript parser).
  const cases = Object.entries(refused);
  const refusedRun = (() => {
    let result: ReturnType<typeof runOn> | undefined;
    return () => {
      result ??= runOn(Object.fromEntries(cases.map(([, body], i) => [fileName(i), body])));
      return result;
    };
  })();
  cases.forEach(([name], i) => {
    it(`fails on ${name}`, () => {
      const result = refusedRun();
      expect(result.code).toBe(1);
      expect(result.out).toMatch(new RegExp(`src/agent/${fileName(i)}\\.ts:\\d+: `));
    });
  });

  it(`accepts: ${Object.keys(accepted).join('; ')}`, () => {
    const result = runOn(Object.fromEntries(Object.values(accepted).map((body, i) => [fileName(i), body])));
    expect(result).toMatchObject({ code: 0 });
  });
});
