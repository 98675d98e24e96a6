import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createReadFileTool } from '../../src/tools/filesystem/read-file.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { PREVIEW_CHARS, ResultSpill } from '../../src/tools/result-spill.js';
import { defineTool, ok } from '../../src/tools/types.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

function setup() {
  const workspace = makeTempDir();
  const spill = new ResultSpill({ dir: path.join(workspace, '.nanobot', 'tool-results'), relativeTo: workspace });
  const registry = new ToolRegistry({ maxResultChars: 1000, spill });
  const lines = Array.from({ length: 3000 }, (_, i) => `log line ${i + 1}`).join('\n');
  registry.register(
    defineTool({ name: 'big', description: 'big output', parameters: z.object({}), execute: async () => ok(lines) }),
  );
  registry.register(createReadFileTool({ policy: createPathPolicy({ workspace, restrictToWorkspace: true }) }));
  const run = (name: string, args: object = {}) =>
    registry.execute({ id: 'c', type: 'function', function: { name, arguments: JSON.stringify(args) } }, makeContext());
  return { workspace, lines, run };
}

describe('tool-result budget', () => {
  it('saves an over-long result under .nanobot/tool-results and gives the model a preview and the path', async () => {
    const { workspace, lines, run } = setup();
    const text = textOf(await run('big'));
    expect(text.length).toBeLessThan(PREVIEW_CHARS + 400);
    expect(text.startsWith('log line 1\n')).toBe(true);
    const shown = /saved at (\.nanobot\/tool-results\/\S+\.txt)/.exec(text)?.[1];
    expect(shown).toBeDefined();
    expect(fs.readFileSync(path.join(workspace, shown ?? ''), 'utf8')).toBe(lines);
  });

  it('lets read_file page through the saved result inside a restricted workspace', async () => {
    const { run } = setup();
    const shown = /saved at (\S+\.txt)/.exec(textOf(await run('big')))?.[1] ?? '';
    const page = textOf(await run('read_file', { path: shown, offset: 2990, limit: 5 }));
    expect(page).toContain('2990| log line 2990');
    expect(page).toContain('2994| log line 2994');
  });
});
