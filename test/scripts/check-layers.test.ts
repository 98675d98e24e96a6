/** The `npm run check` guard: an import in src/ that points up the layers (DESIGN.md §2) fails the check. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(import.meta.dirname, '..', '..');
const SCRIPT = path.join(ROOT, 'scripts', 'check-layers.mjs');

function run(root: string): { code: number | null; out: string } {
  const result = spawnSync(process.execPath, [SCRIPT, '--root', root], { encoding: 'utf8' });
  return { code: result.status, out: `${result.stdout}${result.stderr}` };
}

/** Checks a tree holding each `src/<path>` with its text. */
function runOn(files: Record<string, string>): { code: number | null; out: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'layers-check-'));
  for (const [name, body] of Object.entries(files)) {
    const file = path.join(root, 'src', name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${body}\n`);
  }
  try {
    return run(root);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/** Each importer → the upward import it makes, and the layers the message must name. */
const refused: Record<string, { files: Record<string, string>; from: string; to: string; layers: [string, string] }> = {
  'memory/ value-imports the runner': {
    files: { 'memory/dream.ts': "import { AgentRunner } from '../agent/runner.js';\nexport const r = AgentRunner;" },
    from: 'src/memory/dream.ts',
    to: 'src/agent/runner.ts',
    layers: ['capabilities', 'execution'],
  },
  'tools/ type-imports the prompt builder': {
    files: {
      'tools/x.ts': "import type { ContextBuilder } from '../agent/context.js';\nexport type X = ContextBuilder;",
    },
    from: 'src/tools/x.ts',
    to: 'src/agent/context.ts',
    layers: ['capabilities', 'orchestration'],
  },
  'an inline type specifier': {
    files: { 'tools/x.ts': "import { type Goals } from '../agent/goals.js';\nexport type X = Goals;" },
    from: 'src/tools/x.ts',
    to: 'src/agent/goals.ts',
    layers: ['capabilities', 'orchestration'],
  },
  'a re-export': {
    files: { 'session/x.ts': "export { stripRuntimeContext } from '../agent/context.js';" },
    from: 'src/session/x.ts',
    to: 'src/agent/context.ts',
    layers: ['foundations', 'orchestration'],
  },
  'a dynamic import': {
    files: { 'cron/x.ts': "export const load = () => import('../agent/loop.js');" },
    from: 'src/cron/x.ts',
    to: 'src/agent/loop.ts',
    layers: ['capabilities', 'orchestration'],
  },
  'a typeof import() type': {
    files: { 'util/x.ts': "export type L = typeof import('../gateway/health.js');" },
    from: 'src/util/x.ts',
    to: 'src/gateway/health.ts',
    layers: ['foundations', 'surfaces'],
  },
  'the runner imports the loop (files inside agent/)': {
    files: { 'agent/runner.ts': "import { AgentLoop } from './loop.js';\nexport const l = AgentLoop;" },
    from: 'src/agent/runner.ts',
    to: 'src/agent/loop.ts',
    layers: ['execution', 'orchestration'],
  },
  'the loop imports the wiring': {
    files: { 'agent/loop.ts': "import { createAgent } from '../app/agent.js';\nexport const c = createAgent;" },
    from: 'src/agent/loop.ts',
    to: 'src/app/agent.ts',
    layers: ['orchestration', 'wiring'],
  },
  'a surface imports the wiring from a nested folder': {
    files: {
      'channels/slack/index.ts': "import { createAgent } from '../../app/agent.js';\nexport const c = createAgent;",
    },
    from: 'src/channels/slack/index.ts',
    to: 'src/app/agent.ts',
    layers: ['surfaces', 'wiring'],
  },
};

describe('check-layers', () => {
  it('passes on the real src/ tree', () => {
    const { code, out } = run(ROOT);
    expect(out).toContain('check-layers: ok');
    expect(code).toBe(0);
  });

  for (const [name, { files, from, to, layers }] of Object.entries(refused)) {
    it(`refuses ${name}, naming both files and both layers`, () => {
      const { code, out } = runOn(files);
      expect(code).toBe(1);
      expect(out).toContain(`check-layers: ${from}:`);
      expect(out).toContain(`${layers[0]} (${from}) must not import ${layers[1]} (${to})`);
    });
  }

  it('allows imports that point down or stay in one layer', () => {
    const { code, out } = runOn({
      'app/agent.ts': "import { AgentLoop } from '../agent/loop.js';\nexport const l = AgentLoop;",
      'cli/commands/agent.ts': "import { createAgent } from '../../app/agent.js';\nexport const c = createAgent;",
      'gateway/x.ts':
        "import { toolHint } from '../agent/tool-hint.js';\nimport { r } from '../cli/render.js';\nexport { r, toolHint };",
      'agent/loop.ts': "import { AgentRunner } from './runner.js';\nexport const AgentLoop = AgentRunner;",
      'agent/tool-hint.ts':
        "import type { RunnerEvent } from './runner.js';\nexport const toolHint = (e: RunnerEvent) => e;",
      'agent/runner.ts':
        "import { ToolRegistry } from '../tools/registry.js';\nexport type RunnerEvent = string;\nexport const AgentRunner = ToolRegistry;",
      'tools/registry.ts':
        "import { stripRuntimeContext } from '../session/runtime-context.js';\nexport const ToolRegistry = stripRuntimeContext;",
      'memory/x.ts':
        "import { ToolRegistry } from '../tools/registry.js';\nimport { readFile } from 'node:fs/promises';\nexport { readFile, ToolRegistry };",
      'session/runtime-context.ts': 'export const stripRuntimeContext = (t: string) => t;',
      'cli/render.ts': 'export const r = 1;',
    });
    expect(out).toContain('check-layers: ok');
    expect(code).toBe(0);
  });

  it('lets only the entry points import the wiring', () => {
    const wiring = "import { createAgent } from '../../app/agent.js';\nexport const c = createAgent;";
    const { code, out } = runOn({
      'app/agent.ts': 'export const createAgent = () => 1;',
      'cli/commands/agent.ts': wiring,
      'sdk.ts': "import { createAgent } from './app/agent.js';\nexport const c = createAgent;",
      'gateway/health.ts': "import { createAgent } from '../app/agent.js';\nexport const c = createAgent;",
    });
    expect(code).toBe(1);
    expect(out).toContain('surfaces (src/gateway/health.ts) must not import wiring (src/app/agent.ts)');
    expect(out).toContain('only the entry points (cli/commands/, sdk.ts) may import app/');
    expect(out).not.toContain('src/cli/commands/agent.ts');
    expect(out).not.toContain('src/sdk.ts');
  });

  it('refuses a folder that is in no layer, saying where to add it', () => {
    const { code, out } = runOn({ 'plugins/x.ts': 'export const x = 1;' });
    expect(code).toBe(1);
    expect(out).toContain('src/plugins/x.ts: is in no layer; add its folder to the table in scripts/check-layers.mjs');
  });
});
