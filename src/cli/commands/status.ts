/** `nanobot status`: where things are and what would be used, without calling a model. */

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { channelSchemas } from '../../channels/registry.js';
import type { LoadedConfig } from '../../config/load.js';
import { configNotices } from '../../config/notices.js';
import { fallbackModels, modelInForce, resolveModel } from '../../providers/chain.js';
import { PROVIDERS } from '../../providers/registry.js';
import type { ResolvedProvider } from '../../providers/resolve.js';
import type { GlobalOptions } from '../main.js';
import { setup } from '../setup.js';

export function maskKey(key: string): string {
  if (key.length <= 8) return '****';
  return `${key.slice(0, 4)}…${key.slice(-4)}`;
}

/** "model name contains "claude" (an anthropic keyword); sends "claude-opus-4-5" to https://api.anthropic.com". */
export function explainResolution(resolved: ResolvedProvider): string {
  const why = resolved.reason?.detail ?? 'resolved';
  return `${why}; sends "${resolved.upstreamModel}" to ${resolved.apiBase}`;
}

export async function runStatus(opts: GlobalOptions): Promise<void> {
  const env = process.env;
  const { loaded } = await setup(opts, env);
  const { config } = loaded;
  const out = (line = '') => process.stdout.write(`${line}\n`);
  const model = modelInForce(loaded, env);
  out(`Config:     ${loaded.configPath}`);
  out(`Workspace:  ${loaded.workspace}${existsSync(loaded.workspace) ? '' : ' (missing)'}`);
  out(`Model:      ${model.model}${model.preset ? ` (preset ${model.preset})` : ''}`);
  if (model.autoChosen) out(`            ${model.autoChosen}`);
  const resolved = resolveModel(loaded, model, env);
  if ('error' in resolved) out(`Provider:   ${model.provider} — ${resolved.error} ${resolved.hint}`);
  else {
    out(`Provider:   ${resolved.name}${model.provider === 'auto' ? ' (auto)' : ''} → ${resolved.apiBase}`);
    out(`Resolved:   ${explainResolution(resolved)}`);
  }
  const fallbacks = fallbackModels(loaded).map((f) => f.model);
  out(`Fallbacks:  ${fallbacks.length ? fallbacks.join(' → ') : 'none'}`);
  out(`Workspace-restricted tools: ${config.tools.restrictToWorkspace ? 'yes' : 'no'}`);
  const { timezone, timezoneMode } = config.agents.defaults;
  out(`Time zone:  ${timezone}${timezoneMode === 'auto' ? " (auto: the system's)" : ''}`);
  const notices = configNotices(loaded.raw, env, undefined, channelSchemas());
  if (notices.length) {
    out();
    out('Config notes (set, but nothing acts on them):');
    for (const notice of notices) out(`  ! ${notice.text}`);
  }
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
  const { OAUTH_PROVIDERS, oauthStatus } = await import('../../providers/oauth/index.js');
  for (const def of OAUTH_PROVIDERS) {
    const token = await oauthStatus(join(loaded.dataDir, 'auth'), def);
    if (!token) continue;
    any = true;
    out(`  ${def.name.padEnd(20)} signed in${token.accountId ? ` as ${token.accountId}` : ''}  (provider login)`);
  }
  if (!any) out('  none set — add providers.<name>.apiKey to the config or export e.g. ANTHROPIC_API_KEY');
  await printMcpServers(loaded, env, out);
}

/** Each configured MCP server, connected once to show whether it works (the SDK loads only when there are some). */
async function printMcpServers(loaded: LoadedConfig, env: NodeJS.ProcessEnv, out: (line?: string) => void) {
  const servers = loaded.config.tools.mcpServers;
  out();
  if (Object.keys(servers).length === 0) {
    out('MCP servers: none (add them under tools.mcpServers)');
    return;
  }
  out('MCP servers:');
  const { formatMcpStatus, probeMcpServers } = await import('../../mcp/probe.js');
  const statuses = await probeMcpServers({
    servers,
    ssrfWhitelist: loaded.config.tools.ssrfWhitelist,
    env,
    home: loaded.home,
  });
  for (const line of formatMcpStatus(statuses, servers)) out(line);
}
