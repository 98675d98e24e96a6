/**
 * Homes written by real upstream nanobot (../shared/reference/upstream-homes/, see its README), unpacked into a
 * temp dir for one test. Their files are never copied into this repository: CI has ../shared beside the checkout.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
export const UPSTREAM_HOMES = join(ROOT, '..', 'shared', 'reference', 'upstream-homes');

/** The archives: `pyhome` (latest upstream, after a gateway run), `pyhome-agentonly` (before it), `py030home` (v0.3.0). */
const ARCHIVES = {
  pyhome: { file: 'pyhome.orig.tgz', folder: 'pyhome' },
  'pyhome-agentonly': { file: 'pyhome-agentonly.tgz', folder: 'pyhome' },
  py030home: { file: 'py030home.orig.tgz', folder: 'py030home' },
} as const;
export type UpstreamHomeName = keyof typeof ARCHIVES;

/** The absolute HOME upstream recorded in its files; rewritten to wherever the archive is unpacked. */
const RECORDED_HOME = '/home/pyuser';

export interface UpstreamHome {
  /** The user's HOME (pass as HOME to the CLI). */
  home: string;
  /** `<home>/.nanobot`. */
  dataDir: string;
  /** `<home>/.nanobot/workspace`. */
  workspace: string;
  configPath: string;
  cleanup(): void;
}

export function upstreamHome(name: UpstreamHomeName): UpstreamHome {
  const { file, folder } = ARCHIVES[name];
  const archive = join(UPSTREAM_HOMES, file);
  if (!existsSync(archive)) {
    throw new Error(`${archive} is missing: the tests need ../shared/reference/upstream-homes beside the checkout`);
  }
  const parent = mkdtempSync(join(tmpdir(), `nb-upstream-${name}-`));
  execFileSync('tar', ['-xzf', archive, '-C', parent]);
  const home = join(parent, folder);
  rewriteRecordedHome(home, home);
  const dataDir = join(home, '.nanobot');
  return {
    home,
    dataDir,
    workspace: join(dataDir, 'workspace'),
    configPath: join(dataDir, 'config.json'),
    cleanup: () => rmSync(parent, { recursive: true, force: true }),
  };
}

function rewriteRecordedHome(dir: string, home: string): void {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    const stat = statSync(path);
    if (stat.isDirectory()) {
      rewriteRecordedHome(path, home);
      continue;
    }
    if (!stat.isFile() || stat.size > 5_000_000) continue;
    const text = readFileSync(path, 'utf8');
    if (text.includes(RECORDED_HOME)) writeFileSync(path, text.split(RECORDED_HOME).join(home));
  }
}
