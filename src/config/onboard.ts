/**
 * First-run setup, shared by `nanobot onboard` and every other command: write the config with defaults
 * (adding missing keys to an existing file, never changing a value) and create missing workspace files.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, WorkspaceFs } from '../security/workspace-fs.js';
import { writeFileAtomic } from '../util/fs.js';
import { WORKSPACE_TEMPLATES } from '../util/paths.js';
import { isPlainObject } from './keys.js';
import { applyEnvOverrides, interpolateEnv, parseConfig, readRawConfig } from './load.js';
import { prepareTree } from './prepare.js';
import { ConfigSchema } from './schema.js';

/** Returns `existing` with every key of `defaults` it lacks; existing values (and unknown keys) win. */
export function mergeMissing(
  existing: Record<string, unknown>,
  defaults: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...existing };
  for (const [key, value] of Object.entries(defaults)) {
    const current = out[key];
    if (current === undefined) out[key] = value;
    else if (isPlainObject(current) && isPlainObject(value)) out[key] = mergeMissing(current, value);
  }
  return out;
}

export interface EnsureConfigResult {
  created: boolean;
  /** True when keys were added to an existing file. */
  updated: boolean;
}

/**
 * The defaults a config file lacks, as upstream's onboard writes them: the time zone as `timezoneMode: "auto"` plus
 * the zone detected now, unless the file already says how it picks its zone (a file with `timezone` and no
 * `timezoneMode` is "manual" to upstream, and adding "auto" would change that).
 */
export function defaultsFor(raw: Record<string, unknown>): Record<string, unknown> {
  const defaults = ConfigSchema.parse(prepareTree({})) as Record<string, unknown>;
  const own = isPlainObject(raw.agents) ? raw.agents.defaults : undefined;
  if (isPlainObject(own) && ('timezone' in own || 'timezoneMode' in own)) {
    const filled = (defaults.agents as { defaults: Record<string, unknown> }).defaults;
    delete filled.timezone;
    delete filled.timezoneMode;
  }
  return defaults;
}

/**
 * Checks a tree the way loading it would (env overrides, `${VAR}`, schema), so nothing is written that the next
 * command would refuse. Throws the loader's UserError, naming the keys. A `${VAR}` not exported here stays as
 * written: it may well be set where nanobot runs (a service's environment), and loading says so if it is not.
 */
export function validateForWrite(tree: Record<string, unknown>, configPath: string, env: NodeJS.ProcessEnv): void {
  const overrides = applyEnvOverrides(tree, env);
  const lenient = new Proxy(env, {
    get: (target, name) =>
      typeof name === 'string' && target[name] === undefined ? `\${${name}}` : target[name as string],
  });
  parseConfig(interpolateEnv(overrides.tree, lenient), configPath, overrides.strings);
}

/**
 * Creates the config file with defaults, or adds missing keys to it. `${VAR}` references stay as written.
 * A file that would not load is refused before anything is written: it is left exactly as it was.
 */
export async function ensureConfigFile(
  configPath: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<EnsureConfigResult> {
  const exists = existsSync(configPath);
  const raw = await readRawConfig(configPath);
  const merged = mergeMissing(raw, defaultsFor(raw));
  validateForWrite(merged, configPath, env);
  const text = `${JSON.stringify(merged, null, 2)}\n`;
  const before = exists ? `${JSON.stringify(raw, null, 2)}\n` : '';
  if (exists && text === before) return { created: false, updated: false };
  await writeFileAtomic(configPath, text, 0o600);
  return { created: !exists, updated: exists };
}

/** Copies each template file the workspace lacks; returns the relative paths created. */
export async function syncWorkspaceTemplates(workspace: string, templates = WORKSPACE_TEMPLATES): Promise<string[]> {
  const created: string[] = [];
  await mkdir(workspace, { recursive: true });
  // Into the workspace through the layer: an existing entry (a planted link too, dangling or not) is left alone,
  // and a directory on the way that is a link out is refused, so no template lands outside.
  const wfs = new WorkspaceFs(workspace);
  wfs.mkdirSync('skills');
  for (const file of await listFiles(templates)) {
    const rel = relative(templates, file);
    if (wfs.lstatSync(rel) !== undefined) continue;
    // memory/ holds the user's conversations: owner-only, like the sessions.
    const isMemory = rel.split(sep)[0] === 'memory';
    const mode = isMemory ? PRIVATE_FILE_MODE : (await stat(file)).mode & 0o777;
    const dirMode = isMemory ? PRIVATE_DIR_MODE : 0o755;
    wfs.writeFileAtomicSync(rel, await readFile(file), { mode, dirMode });
    created.push(rel);
  }
  return created;
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir)) {
    const path = join(dir, entry);
    if ((await stat(path)).isDirectory()) out.push(...(await listFiles(path)));
    else out.push(path);
  }
  return out.sort();
}

/** Applies `mutate` to the file's (uninterpolated) tree, validates the result, and writes it atomically. */
export async function updateConfigFile(
  configPath: string,
  mutate: (raw: Record<string, unknown>) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const existing = await readRawConfig(configPath);
  const raw = mergeMissing(existing, defaultsFor(existing));
  mutate(raw);
  validateForWrite(raw, configPath, env);
  await writeFileAtomic(configPath, `${JSON.stringify(raw, null, 2)}\n`, 0o600);
}
