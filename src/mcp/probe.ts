/**
 * `nanobot status`: connects every configured MCP server once (in parallel, with a short deadline), reads what it
 * offers and closes it again, so the user sees which servers work and why the others do not.
 */
import type { McpServerConfig } from '../config/schema.js';
import { createNetworkPolicy } from '../security/network.js';
import { ToolRegistry } from '../tools/registry.js';
import { errorMessage } from '../util/errors.js';
import { type Logger, silentLogger } from '../util/log.js';
import { type McpServerStatus, startMcpServers } from './manager.js';
import { chooseTransport, redactUrl } from './transport.js';

export const PROBE_TIMEOUT_MS = 10_000;

export interface ProbeOptions {
  servers: Record<string, McpServerConfig>;
  ssrfWhitelist: string[];
  env: NodeJS.ProcessEnv;
  home: string;
  log?: Logger;
  timeoutMs?: number;
}

export async function probeMcpServers(options: ProbeOptions): Promise<McpServerStatus[]> {
  return (await probe(options)).map(({ status }) => status);
}

export interface McpInspection {
  status: McpServerStatus;
  /** Every capability the server offers, as the model would see it (whatever enabledTools says), sorted. */
  toolNames: string[];
}

/** Connects one server once with every capability allowed (the WebUI's "test"), then closes it again. */
export async function inspectMcpServer(
  name: string,
  settings: McpServerConfig,
  options: Omit<ProbeOptions, 'servers'>,
): Promise<McpInspection> {
  const [found] = await probe({ ...options, servers: { [name]: { ...settings, enabledTools: ['*'] } } });
  if (!found) throw new Error(`MCP server '${name}' was not probed`);
  return found;
}

async function probe(options: ProbeOptions): Promise<McpInspection[]> {
  let network: ReturnType<typeof createNetworkPolicy>;
  try {
    network = createNetworkPolicy({ whitelist: options.ssrfWhitelist });
  } catch (error) {
    const message = errorMessage(error);
    return Object.entries(options.servers).map(([name, settings]) => {
      const choice = chooseTransport(settings);
      const transport = choice.ok ? choice.type : 'stdio';
      const status: McpServerStatus = {
        name,
        transport,
        state: 'failed',
        tools: 0,
        resources: 0,
        prompts: 0,
        error: message,
      };
      return { status, toolNames: [] };
    });
  }
  const manager = await startMcpServers({
    servers: options.servers,
    registry: new ToolRegistry(),
    network,
    env: options.env,
    home: options.home,
    log: options.log ?? silentLogger,
    connectTimeoutMs: options.timeoutMs ?? PROBE_TIMEOUT_MS,
    reconnectDelaysMs: [0],
    retryDelaysMs: [],
  });
  try {
    return manager.status().map((status) => ({ status, toolNames: manager.toolNames(status.name) }));
  } finally {
    await manager.close();
  }
}

/** One line per server for `nanobot status`: whether it works, and how it is reached (never its args or query). */
export function formatMcpStatus(statuses: McpServerStatus[], servers: Record<string, McpServerConfig>): string[] {
  const width = Math.max(...statuses.map((status) => status.name.length), 10);
  return statuses.map((status) => {
    const settings = servers[status.name];
    const target = settings?.url ? redactUrl(settings.url) : (settings?.command ?? '');
    const state =
      status.state === 'connected'
        ? `connected, ${status.tools} tools, ${status.resources} resources, ${status.prompts} prompts`
        : `${status.state}: ${status.error ?? 'unknown error'}`;
    return `  ${status.name.padEnd(width)}  ${state}  (${status.transport}${target ? ` ${target}` : ''})`;
  });
}
