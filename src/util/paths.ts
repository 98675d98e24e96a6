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

const PackageJson = z.object({ version: z.string().min(1) });
let version: string | undefined;
/** The installed package's version (`0.0.0` when package.json cannot be read or has none), read once. */
export function packageVersion(): string {
  if (version !== undefined) return version;
  try {
    const pkg = parseJsonAs(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8'), PackageJson, 'package.json');
    version = pkg.ok ? pkg.value.version : '0.0.0';
  } catch {
    version = '0.0.0';
  }
  return version;
}
