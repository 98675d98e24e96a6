/** Loads the config for a command, creating the config file and workspace first when they are missing. */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { defaultConfigPath, type LoadedConfig, loadConfig } from '../config/load.js';
import { ensureConfigFile, syncWorkspaceTemplates } from '../config/onboard.js';
import { describePrivateDir, ensurePrivateDir } from '../security/private-dir.js';
import { expandHome } from '../util/fs.js';
import type { GlobalOptions } from './main.js';

export interface Setup {
  loaded: LoadedConfig;
  createdConfig: boolean;
  createdFiles: string[];
}

export async function setup(opts: GlobalOptions, env: NodeJS.ProcessEnv = process.env): Promise<Setup> {
  const home = env.HOME ?? homedir();
  const configPath = resolve(expandHome(opts.config ?? defaultConfigPath(home), home));
  await securedDataDir(configPath);
  let createdConfig = false;
  if (!existsSync(configPath)) createdConfig = (await ensureConfigFile(configPath)).created;
  const loaded = await loadConfig({ configPath, env, home, ...(opts.workspace ? { workspace: opts.workspace } : {}) });
  const createdFiles = existsSync(loaded.workspace) ? [] : await syncWorkspaceTemplates(loaded.workspace);
  return { loaded, createdConfig, createdFiles };
}

/** Creates the data dir 0700, or tightens a loose `~/.nanobot`, saying so on stderr (the CLI's log) once. */
export async function securedDataDir(configPath: string): Promise<void> {
  const dir = dirname(configPath);
  const note = describePrivateDir(dir, await ensurePrivateDir(dir));
  if (note) process.stderr.write(`${note}\n`);
}
