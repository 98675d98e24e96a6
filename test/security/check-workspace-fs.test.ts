/** The `npm run check` guard: raw fs in src/ outside the workspace-file layer fails unless allowlisted with a reason. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SCRIPT = path.join(import.meta.dirname, '..', '..', 'scripts', 'check-workspace-fs.mjs');
const SRC = path.join(import.meta.dirname, '..', '..', 'src');

function runOn(extra: Record<string, string>): { code: number | null; out: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'wsfs-check-'));
  fs.cpSync(SRC, path.join(root, 'src'), { recursive: true });
  for (const [rel, text] of Object.entries(extra)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
  const result = spawnSync(process.execPath, [SCRIPT, '--root', root], { encoding: 'utf8' });
  fs.rmSync(root, { recursive: true, force: true });
  return { code: result.status, out: `${result.stdout}${result.stderr}` };
}

describe('check-workspace-fs', () => {
  it('passes on the tree as it is', () => {
    expect(runOn({})).toMatchObject({ code: 0 });
  });

  const spellings = [
    "import fs from 'node:fs';",
    "import { readFileSync } from 'node:fs';",
    "import fsp from 'node:fs/promises';",
    'import { readFile } from "fs/promises";',
    "import * as fs from 'fs';",
    "const fs = await import('node:fs');",
    "const fs = require('fs');",
    "export { readFile } from 'node:fs/promises';",
    "import {\n  readFileSync,\n} from 'node:fs';",
  ];
  for (const line of spellings) {
    it(`fails on a new file with: ${line.replace(/\n\s*/g, ' ')}`, () => {
      const result = runOn({ 'src/agent/new-reader.ts': `${line}\nexport const x = 1;\n` });
      expect(result.code).toBe(1);
      expect(result.out).toContain('src/agent/new-reader.ts imports node:fs outside the workspace-file layer');
    });
  }

  it('allows a type-only import', () => {
    expect(
      runOn({ 'src/agent/types-only.ts': "import type { Stats } from 'node:fs';\nexport type S = Stats;\n" }).code,
    ).toBe(0);
  });
});
