/** Where the installed package lives: `templates/` and `package.json` are read from there at run time. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { parseJsonAs } from './json.js';

/** Walks up from this module (in `src/util/` when run from source, in `dist/` when bundled) to package.json. */
function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'templates'))) return dir;
    dir = dirname(dir);
  }
  throw new Error('nanobot: cannot find the package root (package.json next to templates/)');
}

export const PACKAGE_ROOT = findPackageRoot();
export const WORKSPACE_TEMPLATES = join(PACKAGE_ROOT, 'templates', 'workspace');
/** The skills shipped with the package (`skills/<name>/SKILL.md`); workspace skills of the same name win. */
export const BUILTIN_SKILLS = join(PACKAGE_ROOT, 'skills');

const PackageJson = z.looseObject({ version: z.string().min(1) });
let manifest: { ok: true; value: z.infer<typeof PackageJson> } | { ok: false } | undefined;

function readManifest(): { ok: true; value: z.infer<typeof PackageJson> } | { ok: false } {
  if (manifest) return manifest;
  try {
    const pkg = parseJsonAs(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8'), PackageJson, 'package.json');
    manifest = pkg.ok ? { ok: true, value: pkg.value } : { ok: false };
  } catch {
    manifest = { ok: false };
  }
  return manifest;
}

/** The installed package's version (`0.0.0` when package.json cannot be read or has none), read once. */
export function packageVersion(): string {
  const read = readManifest();
  return read.ok ? read.value.version : '0.0.0';
}

/** The installed package's package.json (every key), or undefined when it cannot be read. */
export function packageJson(): Record<string, unknown> | undefined {
  const read = readManifest();
  return read.ok ? read.value : undefined;
}
