/**
 * All configured MCP servers of one agent. They connect in parallel, each with a deadline, and one broken server
 * never stops the others: its failure is logged and shown in `nanobot status`. Each server's tools are kept in the
 * tool registry as they change (connect, reconnect, list_changed); the registry sorts them after the built-ins, so
 * the advertised tool list stays in a stable order.
 */
import type { McpServerConfig } from '../config/schema.js';
import type { NetworkPolicy } from '../security/network.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { Logger } from '../util/log.js';
import type { McpTool } from './capabilities.js';
import { McpConnection, type McpServerStatus } from './connection.js';
import { chooseTransport, type FetchLike, type McpTransportType } from './transport.js';

export type { McpServerState, McpServerStatus } from './connection.js';

export const DEFAULT_CONNECT_TIMEOUT_MS = 20_000;
const DEFAULT_RECONNECT_DELAYS_MS = [0, 500, 2_000];
const DEFAULT_RETRY_DELAYS_MS = [30_000, 60_000, 120_000, 300_000, 600_000];

export interface McpManagerOptions {
  servers: Record<string, McpServerConfig>;
  registry: ToolRegistry;
  network: NetworkPolicy;
  /** The parent environment stdio servers take their basics (PATH, HOME, …) from. */
  env: NodeJS.ProcessEnv;
  home: string;
  log: Logger;
  connectTimeoutMs?: number;
  reconnectDelaysMs?: readonly number[];
  /** Background retries for servers that are down; `[]` turns them off (`nanobot status` probes once). */
  retryDelaysMs?: readonly number[];
  fetch?: FetchLike;
}

export interface McpManager {
  /** Every configured server, by name: connected with its counts, or why not. */
  status(): McpServerStatus[];
  /** The names the model sees for the server's capabilities now (`mcp_<server>_…`), sorted; [] when unknown. */
  toolNames(server: string): string[];
  /**
   * One connection attempt now for a server that is not connected (the WebUI's "reconnect"); false when no such
   * server runs. Never throws: a failure shows in status().
   */
  retry(server: string): Promise<boolean>;
  /** Removes the servers' tools from the registry and stops them (stdio processes exit). */
  close(): Promise<void>;
}

export async function startMcpServers(options: McpManagerOptions): Promise<McpManager> {
  const { registry, log } = options;
  const owned = new Map<string, Map<string, McpTool>>();
  const invalid: McpServerStatus[] = [];
  const connections: McpConnection[] = [];

  const sync = (server: string, tools: McpTool[]) => {
    const previous = owned.get(server) ?? new Map<string, McpTool>();
    const next = new Map<string, McpTool>();
    for (const tool of tools) {
      const old = previous.get(tool.name);
      if (next.has(tool.name)) {
        log.warn(`MCP server '${server}': two capabilities are both named ${tool.name}; keeping the first`);
      } else if (old && old.fingerprint === tool.fingerprint) {
        next.set(tool.name, old);
      } else if (!old && registry.has(tool.name)) {
        log.warn(`MCP server '${server}': ${tool.name} is already taken by another tool; skipped`);
      } else {
        if (old) registry.unregister(tool.name);
        try {
          registry.register(tool);
          next.set(tool.name, tool);
        } catch (error) {
          log.warn(`MCP server '${server}': ${tool.name} skipped: ${error instanceof Error ? error.message : error}`);
        }
      }
    }
    for (const name of previous.keys()) if (!next.has(name)) registry.unregister(name);
    owned.set(server, next);
  };

  for (const name of Object.keys(options.servers).sort()) {
    const settings = options.servers[name] as McpServerConfig;
    const problem = configurationProblem(settings);
    const choice = chooseTransport(settings);
    if (problem || !choice.ok) {
      const error = problem ?? (choice.ok ? '' : choice.error);
      log.warn(`MCP server '${name}' skipped: ${error}`);
      invalid.push(failedStatus(name, choice.ok ? choice.type : 'stdio', error));
      continue;
    }
    connections.push(
      new McpConnection({
        name,
        settings,
        transport: choice.type,
        deps: { network: options.network, env: options.env, home: options.home, fetch: options.fetch },
        log,
        connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
        reconnectDelaysMs: options.reconnectDelaysMs ?? DEFAULT_RECONNECT_DELAYS_MS,
        retryDelaysMs: options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS,
        onTools: (tools) => sync(name, tools),
      }),
    );
  }
  await Promise.all(connections.map((connection) => connection.start()));

  return {
    status: () =>
      [...invalid, ...connections.map((connection) => connection.status())].sort((a, b) =>
        a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
      ),
    toolNames: (server) => [...(owned.get(server)?.keys() ?? [])].sort(),
    retry: async (server) => {
      const connection = connections.find((candidate) => candidate.name === server);
      if (!connection) return false;
      await connection.retry();
      return true;
    },
    close: async () => {
      for (const tools of owned.values()) for (const name of tools.keys()) registry.unregister(name);
      owned.clear();
      await Promise.allSettled(connections.map((connection) => connection.close()));
    },
  };
}

function configurationProblem(settings: McpServerConfig): string | undefined {
  if (settings.auth === 'oauth') {
    return 'OAuth sign-in is not supported yet; put a token in "headers" (e.g. "Authorization": "Bearer …")';
  }
  return undefined;
}

function failedStatus(name: string, transport: McpTransportType, error: string): McpServerStatus {
  return { name, transport, state: 'failed', tools: 0, resources: 0, prompts: 0, error };
}
