/** The agent's base tool registry: the default tools (files, exec, …), web search and fetch, and `message`. */
import { join } from 'node:path';
import type { MessageBus } from '../bus/message-bus.js';
import type { LoadedConfig } from '../config/load.js';
import { createNetworkPolicy, type NetworkPolicy } from '../security/network.js';
import { parseProxyUrl } from '../security/proxy.js';
import { collectSecrets, secretsOf } from '../security/secrets.js';
import { createPathPolicy } from '../security/workspace.js';
import { createDefaultTools, createExecSessionManager } from '../tools/index.js';
import { createMessageTool, type MessageTargetCheck } from '../tools/message.js';
import { ToolRegistry } from '../tools/registry.js';
import { ResultSpill } from '../tools/result-spill.js';
import { createWebFetchTool, createWebSearchTool } from '../tools/web/index.js';
import { UserError } from '../util/errors.js';
import { BUILTIN_SKILLS } from '../util/paths.js';
import { generatedImagesDir, registerImageTool } from './agent-image.js';

export interface BaseTools {
  tools: ToolRegistry;
  /** Where long results are written; shared with the subagents' registry. */
  spill: ResultSpill;
  /** What every tool result is masked against. */
  secrets: () => string[];
  network: NetworkPolicy;
  execSessions: ReturnType<typeof createExecSessionManager>;
}

export function baseTools(
  loaded: LoadedConfig,
  env: NodeJS.ProcessEnv,
  bus: MessageBus,
  messageTargets?: MessageTargetCheck,
): BaseTools {
  const { config, workspace } = loaded;
  const spill = new ResultSpill({ dir: join(workspace, '.nanobot', 'tool-results'), relativeTo: workspace });
  // Every tool result is masked against the configured secrets (and keys providers read from the environment, such
  // as OPENROUTER_API_KEY) before the model reads it.
  const envSecrets = collectSecrets(env);
  const secrets = () => [...secretsOf(config), ...envSecrets];
  const tools = new ToolRegistry({ maxResultChars: config.agents.defaults.maxToolResultChars, spill, secrets });
  const network = networkPolicy(config.tools.ssrfWhitelist);
  const execSessions = createExecSessionManager();
  const exec = config.tools.exec;
  for (const tool of createDefaultTools({
    workspace,
    restrictToWorkspace: config.tools.restrictToWorkspace,
    fileTools: config.tools.file.enable,
    exec: {
      enable: exec.enable,
      timeout: exec.timeout,
      pathPrepend: exec.pathPrepend,
      pathAppend: exec.pathAppend,
      allowedEnvKeys: exec.allowedEnvKeys,
      allowPatterns: exec.allowPatterns,
      denyPatterns: exec.denyPatterns,
      sandbox: exec.sandbox,
      sandboxNetwork: exec.sandboxNetwork,
      sandboxRoBinds: exec.sandboxRoBinds,
      sandboxRwBinds: exec.sandboxRwBinds,
      dataDir: loaded.dataDir,
    },
    sessions: execSessions,
    network,
    // Skills name their SKILL.md for the model to read, even when file tools are kept to the workspace; files users
    // send through chat channels arrive in <dataDir>/media and are named by path in their message.
    extraReadDirs: [BUILTIN_SKILLS, join(loaded.dataDir, 'media')],
  })) {
    tools.register(tool);
  }
  registerWebTools(tools, loaded, env, webNetwork(config.tools.ssrfWhitelist, config.tools.web.proxy, network));
  registerImageTool(tools, loaded, env, network);
  // Generated images are delivered by attaching their artifacts (in nanobot's media dir, outside the workspace).
  const generated = generatedImagesDir(loaded);
  tools.register(
    createMessageTool({
      send: (message) => bus.publishOutbound(message),
      policy: createPathPolicy({
        workspace,
        restrictToWorkspace: config.tools.restrictToWorkspace,
        ...(generated ? { extraReadDirs: [generated] } : {}),
      }),
      mediaDir: join(loaded.dataDir, 'media', 'outbound'),
      maxPerMinute: config.tools.maxSessionMessagesPerMinute,
      ...(messageTargets ? { allowTarget: messageTargets } : {}),
    }),
  );
  return { tools, spill, secrets, network, execSessions };
}

/** web_search and web_fetch when `tools.web.enable`; the Jina reader only with JINA_API_KEY set. */
export function registerWebTools(
  tools: ToolRegistry,
  loaded: LoadedConfig,
  env: NodeJS.ProcessEnv,
  network: NetworkPolicy,
): void {
  const web = loaded.config.tools.web;
  if (!web.enable) return;
  const userAgent = web.userAgent ?? undefined;
  const search = { ...web.search, apiKey: web.search.apiKey ?? undefined, baseUrl: web.search.baseUrl ?? undefined };
  tools.register(createWebSearchTool({ network, search, env, ...(userAgent ? { userAgent } : {}) }));
  const jinaKey = env.JINA_API_KEY;
  tools.register(
    createWebFetchTool({
      network,
      ...(userAgent ? { userAgent } : {}),
      jinaReader: web.fetch.useJinaReader && jinaKey ? { apiKey: jinaKey } : null,
    }),
  );
}

/** The web tools' SSRF policy: the shared one, or the same checks with every request sent through `tools.web.proxy`. */
function webNetwork(whitelist: string[], proxy: string | null | undefined, shared: NetworkPolicy): NetworkPolicy {
  if (!proxy?.trim()) return shared;
  const parsed = parseProxyUrl(proxy, 'tools.web.proxy');
  if (!parsed.ok)
    throw new UserError(parsed.reason, 'Set tools.web.proxy to an http://, https:// or socks5:// URL, or remove it.');
  return networkPolicy(whitelist, parsed.url);
}

/** The SSRF policy; a malformed `tools.ssrfWhitelist` entry is a UserError saying how to write one. */
export function networkPolicy(whitelist: string[], proxy?: string): NetworkPolicy {
  try {
    return createNetworkPolicy({ whitelist, ...(proxy ? { proxy } : {}) });
  } catch (err) {
    throw new UserError((err as Error).message, 'Write each entry as an address or CIDR, e.g. "100.64.0.0/10".');
  }
}
