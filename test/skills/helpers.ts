/** Temporary workspaces and skill folders for the skills tests. */
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach } from 'vitest';

const created: string[] = [];

afterEach(() => {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix = 'nb-skills-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  created.push(dir);
  return dir;
}

/** A SKILL.md with the given frontmatter lines and body. */
export function skillText(frontmatter: string, body = '# Instructions\n\nDo the thing.'): string {
  return `---\n${frontmatter.trim()}\n---\n\n${body}\n`;
}

/** Writes `<root>/<name>/SKILL.md` (and any extra files, relative to the skill folder); returns the folder. */
export function writeSkill(root: string, name: string, text: string, files: Record<string, string> = {}): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), text);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

/** A folder holding executables with these names, to use as PATH. */
export function fakeBins(...names: string[]): string {
  const dir = tempDir('nb-bins-');
  for (const name of names) {
    writeFileSync(join(dir, name), '#!/bin/sh\nexit 0\n');
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}
