/**
 * The MCP servers as nanobot's WebUI lists them (`McpPresetsPayload` in its webui/src/lib/types.ts): one row per
 * server in `tools.mcpServers`, with the running agent's connection state and tool names. nanobot also lists a
 * catalog of presets to install; this version has none, so every row is a configured (`custom`) server.
 * Nothing secret leaves here: env and header values are never sent, the summary masks secret-looking arguments
 * and strips a URL's credentials, query and fragment, and error text is redacted.
 */
import type { McpRuntime, WebUiBackend } from '../channels/websocket/backend.js';
import type { McpServerConfig } from '../config/schema.js';
import type { McpServerStatus } from '../mcp/manager.js';
import { chooseTransport, redactUrl } from '../mcp/transport.js';
import { collectSecrets, redactArgs, redactSecrets } from '../security/secrets.js';
import { commandAvailable as onPath } from '../skills/requirements.js';
import { configOf } from './config-tree.js';

/** `last_action` of a mutation's answer. */
export interface McpLastAction {
  ok: boolean;
  message: string;
  installed?: boolean;
  removed?: boolean;
  verification?: string[];
  tool_count?: number;
  tool_names?: string[];
  checked_at?: string | null;
  error?: string | null;
}

export interface McpPresetsPayload {
  presets: Record<string, unknown>[];
  installed_count: number;
  requires_restart?: boolean;
  hot_reload?: { ok: boolean; message: string; requires_restart?: boolean };
  last_action?: McpLastAction;
}

/** nanobot's runtime states the WebUI shows; ours add `disconnected` (reconnects on next use) and `closed`. */
const RUNTIME_STATES = new Set(['connecting', 'connected', 'failed']);

export function mcpPayload(
  backend: WebUiBackend,
  extra: { lastAction?: McpLastAction; toolPreview?: { server: string; names: string[] } } = {},
): McpPresetsPayload {
  const { config } = configOf(backend).loaded();
  const servers = config.tools.mcpServers;
  const runtime = backend.mcp?.();
  const statuses = new Map((runtime?.status() ?? []).map((status) => [status.name, status]));
  const secrets = collectSecrets(config);
  const presets = Object.keys(servers)
    .sort()
    .map((name) => {
      const preview = extra.toolPreview?.server === name ? extra.toolPreview.names : undefined;
      return serverRow(name, servers[name] as McpServerConfig, statuses.get(name), runtime, secrets, preview);
    });
  return {
    presets,
    installed_count: presets.length,
    ...(extra.lastAction ? { last_action: extra.lastAction } : {}),
  };
}

function serverRow(
  name: string,
  settings: McpServerConfig,
  status: McpServerStatus | undefined,
  runtime: McpRuntime | undefined,
  secrets: readonly string[],
  preview: string[] | undefined,
): Record<string, unknown> {
  const choice = chooseTransport(settings);
  const oauth = settings.auth === 'oauth';
  const command = settings.command ?? '';
  const missingCommand = !!command && !commandAvailable(command);
  const state = oauth ? 'authorization_required' : missingCommand ? 'missing_dependency' : 'configured';
  const configured = !oauth;
  const live = status?.state === 'connected' ? runtime?.toolNames(name) : undefined;
  const toolNames = preview ?? live ?? [];
  const row: Record<string, unknown> = {
    name,
    display_name: name,
    category: 'custom',
    description: '',
    docs_url: '',
    transport: choice.ok ? choice.type : (settings.type ?? ''),
    auth: settings.auth ?? null,
    requires: '',
    note: '',
    install_supported: true,
    installed: true,
    configured,
    available: configured && (command ? !missingCommand : !!settings.url),
    status: state,
    logo_url: null,
    brand_color: null,
    required_fields: [],
    connection_summary: connectionSummary(settings, secrets),
    enabled_tools: [...settings.enabledTools],
    tool_names: toolNames,
    tool_count: toolNames.length,
    source: 'custom',
  };
  if (status && configured && RUNTIME_STATES.has(status.state)) row.runtime_status = status.state;
  if (status?.error) row.error = redactSecrets(status.error, secrets);
  return row;
}

/** `command arg arg…` (secret values masked) or the URL without credentials, query or fragment. */
export function connectionSummary(settings: McpServerConfig, secrets: readonly string[]): string {
  if (settings.command) return [settings.command, ...redactArgs(settings.args, secrets)].join(' ').trim();
  if (settings.url) return redactUrl(settings.url);
  return '';
}

function commandAvailable(command: string): boolean {
  return onPath(command, process.env.PATH ?? '', process.platform);
}
