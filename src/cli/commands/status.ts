/** `nanobot status`: where things are and what would be used, without calling a model. */
import { existsSync } from 'node:fs';
import { providerSettings } from '../../agent/bootstrap.js';
import { effectiveModel } from '../../config/model.js';
import { resolveProvider } from '../../providers/index.js';
import { PROVIDERS } from '../../providers/registry.js';
import type { GlobalOptions } from '../main.js';
import { setup } from '../setup.js';

export function maskKey(key: string): string {
  if (key.length <= 8) return '****';
  return `${key.slice(0, 4)}…${key.slice(-4)}`;
}

export async function runStatus(opts: GlobalOptions): Promise<void> {
  const env = process.env;
  const { loaded } = await setup(opts, env);
  const { config } = loaded;
  const out = (line = '') => process.stdout.write(`${line}\n`);
  const model = effectiveModel(config);
  out(`Config:     ${loaded.configPath}`);
  out(`Workspace:  ${loaded.workspace}${existsSync(loaded.workspace) ? '' : ' (missing)'}`);
  out(`Model:      ${model.model}${model.preset ? ` (preset ${model.preset})` : ''}`);
  const resolved = resolveProvider({
    model: model.model,
    provider: model.provider,
    providers: providerSettings(loaded),
    env,
  });
  if ('error' in resolved) out(`Provider:   ${model.provider} — ${resolved.error} ${resolved.hint}`);
  else
    out(
      `Provider:   ${resolved.name}${model.provider === 'auto' ? ' (auto)' : ''} → ${resolved.apiBase ?? 'SDK default'}`,
    );
  out(`Workspace-restricted tools: ${config.tools.restrictToWorkspace ? 'yes' : 'no'}`);
  out();
  out('API keys:');
  let any = false;
  for (const spec of PROVIDERS) {
    const fromConfig = config.providers[spec.name]?.apiKey;
    const fromEnv = spec.envKey ? env[spec.envKey] : undefined;
    const key = fromConfig || fromEnv;
    if (!key) continue;
    any = true;
    out(`  ${spec.name.padEnd(20)} ${maskKey(key)}  (${fromConfig ? 'config' : `$${spec.envKey}`})`);
  }
  for (const [name, p] of Object.entries(config.providers)) {
    if (PROVIDERS.some((s) => s.name === name) || !p.apiKey) continue;
    any = true;
    out(`  ${name.padEnd(20)} ${maskKey(p.apiKey)}  (config, custom)`);
  }
  if (!any) out('  none set — add providers.<name>.apiKey to the config or export e.g. ANTHROPIC_API_KEY');
}
