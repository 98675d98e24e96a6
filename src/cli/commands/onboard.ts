/** `nanobot onboard [--wizard]`: create or complete the config and the workspace. */

import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { defaultConfigPath, loadConfig } from '../../config/load.js';
import { ensureConfigFile, syncWorkspaceTemplates, updateConfigFile } from '../../config/onboard.js';
import { expandHome } from '../../util/fs.js';
import type { GlobalOptions } from '../main.js';
import { securedDataDir } from '../setup.js';

export async function runOnboard(opts: GlobalOptions & { wizard?: boolean }): Promise<void> {
  const home = process.env.HOME ?? homedir();
  const configPath = resolve(expandHome(opts.config ?? defaultConfigPath(home), home));
  await securedDataDir(configPath);
  const { created, updated } = await ensureConfigFile(configPath);
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(
    created
      ? `Created ${configPath}`
      : updated
        ? `Added missing keys to ${configPath}`
        : `Config ${configPath} is up to date`,
  );

  if (opts.wizard) {
    const { runWizard } = await import('../wizard.js');
    const answers = await runWizard();
    if (answers) {
      await updateConfigFile(configPath, (raw) => {
        const agents = raw.agents as { defaults: Record<string, unknown> };
        agents.defaults.provider = answers.provider;
        agents.defaults.model = answers.model;
        const providers = raw.providers as Record<string, Record<string, unknown>>;
        const entry = providers[answers.provider] ?? {};
        if (answers.apiKey) entry.apiKey = answers.apiKey;
        if (answers.apiBase) entry.apiBase = answers.apiBase;
        providers[answers.provider] = entry;
      });
      out(`Saved provider "${answers.provider}" and model "${answers.model}"`);
    }
  }

  const loaded = await loadConfig({ configPath, home, ...(opts.workspace ? { workspace: opts.workspace } : {}) });
  const files = await syncWorkspaceTemplates(loaded.workspace);
  out(
    files.length
      ? `Workspace ${loaded.workspace}: created ${files.join(', ')}`
      : `Workspace ${loaded.workspace} is ready`,
  );
  if (!opts.wizard) {
    out('');
    out('Next: put an API key in the config (e.g. providers.anthropic.apiKey) or export it (ANTHROPIC_API_KEY),');
    out('then run: nanobot agent -m "Hello"   (or `nanobot onboard --wizard` to be asked)');
  }
}
