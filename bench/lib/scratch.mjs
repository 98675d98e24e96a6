// One scratch folder per bench run (homes, workspaces, session files), removed when the run ends.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let root;
let count = 0;

/** A new empty directory under this run's scratch folder. */
export function scratchDir(name) {
  root ??= mkdtempSync(join(tmpdir(), 'nb-bench-'));
  const dir = join(root, `${name}-${++count}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export function removeScratch() {
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
}
