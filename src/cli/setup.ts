/**
 * Loads the config for a command. The first run creates `~/.nanobot/config.json` (saying so) and the workspace; a
 * config named with `-c` that does not exist is an error, never created: a typo must not become a fresh config.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { defaultConfigPath, type LoadedConfig, loadConfig } from '../config/load.js';
import { ensureConfigFile, syncWorkspaceTemplates } from '../config/onboard.js';
import { describePrivateDir, ensurePrivateDir } from '../security/private-dir.js';
import { UserError } from '../util/errors.js';
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
  if (opts.config !== undefined && !existsSync(configPath)) {
    throw new UserError(
      `${configPath} does not exist.`,
      `Check the path, or create it with \`nanobot onboard -c ${opts.config}\`.`,
    );
  }
  await securedDataDir(configPath);
  let createdConfig = false;
  if (!existsSync(configPath)) {
    createdConfig = (await ensureConfigFile(configPath, env)).created;
    if (createdConfig) {
      process.stderr.write(
        `nanobot: created ${configPath} with the defaults (\`nanobot onboard --wizard\` sets a provider and key)\n`,
      );
    }
  }
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
