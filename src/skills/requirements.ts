/** Whether a skill can run here: its binaries on PATH, its environment variables set, its platform. */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { SkillRequirements } from './frontmatter.js';

export interface RequirementContext {
  env: NodeJS.ProcessEnv;
  /** The PATH searched for binaries (the one `exec` commands get). */
  searchPath: string;
  platform: NodeJS.Platform;
  /**
   * The environment variables `exec` passes to commands (tools.exec.allowedEnvKeys plus HOME, PATH…); a required
   * variable outside them is set for nanobot but never reaches the skill's commands. Omitted: no such filter.
   */
  commandEnvKeys?: readonly string[];
}

/** Reasons the skill cannot run here, e.g. "missing binary: gh"; empty when it can. */
export function unmetRequirements(requires: SkillRequirements, context: RequirementContext): string[] {
  const reasons: string[] = [];
  const onPath = (bin: string) => findExecutable(bin, context.searchPath, context.platform) !== undefined;
  for (const bin of requires.bins) if (!onPath(bin)) reasons.push(`missing binary: ${bin}`);
  if (requires.anyBins.length > 0 && !requires.anyBins.some(onPath)) {
    reasons.push(`missing binary: one of ${requires.anyBins.join(', ')}`);
  }
  for (const name of requires.env) {
    if (!context.env[name]) reasons.push(`missing env: ${name}`);
    else if (context.commandEnvKeys && !context.commandEnvKeys.includes(name)) {
      reasons.push(`env ${name} is not passed to commands (add it to tools.exec.allowedEnvKeys)`);
    }
  }
  if (requires.os.length > 0 && !requires.os.map(platformName).includes(context.platform)) {
    reasons.push(`not for ${context.platform} (only ${requires.os.join(', ')})`);
  }
  return reasons;
}

/** nanobot writes `windows` and `macos` where Node says `win32` and `darwin`. */
function platformName(name: string): string {
  const lower = name.toLowerCase();
  if (lower === 'windows' || lower === 'win') return 'win32';
  if (lower === 'macos' || lower === 'mac' || lower === 'osx') return 'darwin';
  return lower;
}

/** The first executable file named `bin` on the search path, like `which`; names with a slash are not searched. */
export function findExecutable(bin: string, searchPath: string, platform: NodeJS.Platform): string | undefined {
  if (!bin || bin.includes('/') || bin.includes('\\')) return undefined;
  const extensions = platform === 'win32' ? ['', '.exe', '.cmd', '.bat'] : [''];
  for (const dir of searchPath.split(delimiter)) {
    if (!dir) continue;
    for (const extension of extensions) {
      const candidate = join(dir, bin + extension);
      if (isExecutableFile(candidate, platform)) return candidate;
    }
  }
  return undefined;
}

function isExecutableFile(path: string, platform: NodeJS.Platform): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    if (platform !== 'win32') accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** A command as a launcher would take it: a path with a slash is checked as is, a bare name searched on the path. */
export function commandAvailable(command: string, searchPath: string, platform: NodeJS.Platform): boolean {
  if (command.includes('/') || command.includes('\\')) return isExecutableFile(command, platform);
  return findExecutable(command, searchPath, platform) !== undefined;
}
