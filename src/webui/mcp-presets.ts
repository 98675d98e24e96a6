/**
 * Settings › MCP of nanobot's WebUI (`/api/settings/mcp-presets`, `settings.mcp.*`): the configured MCP servers
 * with their live state, adding one by command or URL or by pasting an `mcpServers` block, choosing its tools,
 * testing the connection (connect, list every tool, close) and removing it. Changes go to config.json through the
 * settings API's one writer; the gateway's reload then restarts the MCP servers with the new config.
 * nanobot's preset catalog (enable/disable of a named preset) and its MCP OAuth sign-in are not in this version:
 * those actions answer 501 with what to do instead.
 */
import { inspectMcpServer } from '../mcp/probe.js';
import { collectSecrets, redactSecrets } from '../security/secrets.js';
import { commandAvailable } from '../skills/requirements.js';
import { type ActionHandler, WebuiApiError, type WebuiApiModule } from './api.js';
import { childOf, configOf } from './config-tree.js';
import { type McpLastAction, type McpPresetsPayload, mcpPayload } from './mcp-rows.js';
import { enabledTools, importedServers, OAUTH_UNSUPPORTED, serverEntry, serverName } from './mcp-servers.js';

const TEST_TIMEOUT_MAX_S = 30;
const PRESETS_UNSUPPORTED =
  'MCP presets are not in this version: add the server by its command or URL (settings.mcp.custom), or paste its mcpServers block (settings.mcp.import)';
const DISABLE_UNSUPPORTED =
  'MCP servers cannot be switched off in this version: remove the server, or turn its tools off (settings.mcp.tools)';

type Raw = Record<string, unknown>;

/** `tools.mcpServers` of the file's tree, created when missing. */
function serversOf(raw: Raw): Raw {
  return childOf(childOf(raw, 'tools'), 'mcpServers');
}

/** The name of a configured server, exactly as the config spells it; 404 when there is none. */
function configuredName(backend: Parameters<ActionHandler>[0]['backend'], value: unknown): string {
  if (typeof value !== 'string' || !value.trim()) throw new WebuiApiError(400, 'missing MCP server name');
  const name = value.trim();
  const servers = configOf(backend).loaded().config.tools.mcpServers;
  if (!Object.hasOwn(servers, name)) throw new WebuiApiError(404, 'unknown MCP server');
  return name;
}

/** Writes, reloads (which restarts the MCP servers) and answers the list with what happened. */
async function write(
  context: Parameters<ActionHandler>[0],
  mutate: (servers: Raw) => void,
  lastAction: McpLastAction,
): Promise<McpPresetsPayload> {
  const { applied } = await configOf(context.backend).update((raw) => mutate(serversOf(raw)));
  return {
    ...mcpPayload(context.backend, { lastAction }),
    requires_restart: !applied,
    hot_reload: applied
      ? { ok: true, message: 'applied: the MCP servers were restarted with the new config' }
      : {
          ok: false,
          message: 'saved, but the gateway kept its previous config (see its log)',
          requires_restart: true,
        },
  };
}

const custom: ActionHandler = async (context, payload) => {
  const name = serverName(payload.name);
  return write(
    context,
    (servers) => {
      const previous = Object.hasOwn(servers, name) ? (servers[name] as Raw) : undefined;
      servers[name] = serverEntry(payload, `MCP server '${name}'`, previous);
    },
    { ok: true, message: `Saved MCP server ${name}.`, installed: true, verification: ['config_present'] },
  );
};

const importServers: ActionHandler = async (context, payload) => {
  const imported = importedServers(payload.config);
  return write(context, (servers) => Object.assign(servers, imported), {
    ok: true,
    message: `Imported ${Object.keys(imported).length} MCP server(s).`,
    installed: true,
    verification: ['config_present'],
  });
};

const remove: ActionHandler = async (context, payload) => {
  const name = configuredName(context.backend, payload.name);
  return write(
    context,
    (servers) => {
      delete servers[name];
    },
    { ok: true, message: `Removed MCP server ${name}.`, removed: true, verification: ['config_absent'] },
  );
};

const tools: ActionHandler = async (context, payload) => {
  const name = configuredName(context.backend, payload.name);
  const allowed = enabledTools(payload.enabled_tools);
  return write(
    context,
    (servers) => {
      const entry = servers[name];
      if (typeof entry !== 'object' || entry === null) throw new WebuiApiError(404, 'unknown MCP server');
      (entry as Raw).enabledTools = allowed;
    },
    { ok: true, message: `Updated tools for MCP server ${name}.` },
  );
};

const test: ActionHandler = async ({ backend }, payload) => {
  const name = configuredName(backend, payload.name);
  const loaded = configOf(backend).loaded();
  const settings = loaded.config.tools.mcpServers[name];
  const checkedAt = new Date().toISOString();
  const failed = (message: string, error: string): McpPresetsPayload =>
    mcpPayload(backend, {
      lastAction: { ok: false, message, error, tool_count: 0, tool_names: [], checked_at: checkedAt },
    });
  if (!settings) throw new WebuiApiError(404, 'unknown MCP server');
  if (settings.auth === 'oauth') return failed(OAUTH_UNSUPPORTED, 'oauth not supported');
  if (settings.command && !commandAvailable(settings.command, process.env.PATH ?? '', process.platform)) {
    return failed(`${name} needs '${settings.command}', which is not on PATH.`, 'missing dependency');
  }
  const inspection = await inspectMcpServer(name, settings, {
    ssrfWhitelist: loaded.config.tools.ssrfWhitelist,
    env: process.env,
    home: loaded.home,
    timeoutMs: Math.max(5, Math.min(settings.toolTimeout, TEST_TIMEOUT_MAX_S)) * 1000,
  });
  if (inspection.status.state !== 'connected') {
    const error = redactSecrets(inspection.status.error ?? 'the connection failed', collectSecrets(loaded.config));
    return failed(`${name} could not connect: ${error}`, error);
  }
  const names = inspection.toolNames;
  return mcpPayload(backend, {
    toolPreview: { server: name, names },
    lastAction: {
      ok: true,
      message: names.length ? `${name} connected with ${names.length} tools.` : `${name} connected, with no tools.`,
      tool_count: names.length,
      tool_names: names,
      checked_at: checkedAt,
    },
  });
};

const reconnect: ActionHandler = async ({ backend }, payload) => {
  const name = configuredName(backend, payload.name);
  const retried = (await backend.mcp?.()?.retry(name)) ?? false;
  const state = backend
    .mcp?.()
    ?.status()
    .find((status) => status.name === name)?.state;
  const ok = retried && state === 'connected';
  return {
    ...mcpPayload(backend, {
      lastAction: {
        ok,
        message: retried
          ? `Retried connection for MCP server ${name}${ok ? '.' : ' (still not connected; see its error).'}`
          : `MCP server ${name} is not running in the gateway; it starts after the next config change or restart.`,
      },
    }),
    ...(retried ? {} : { requires_restart: true }),
  };
};

const refuse =
  (message: string): ActionHandler =>
  async () => {
    throw new WebuiApiError(501, message);
  };

export const mcpPresetsModule: WebuiApiModule = {
  routes: {
    'settings/mcp-presets': async ({ backend }) => mcpPayload(backend),
    'settings/mcp-oauth/status': async () => {
      throw new WebuiApiError(501, OAUTH_UNSUPPORTED);
    },
  },
  actions: {
    'settings.mcp.custom': custom,
    'settings.mcp.import': importServers,
    'settings.mcp.import_cursor': importServers,
    'settings.mcp.remove': remove,
    'settings.mcp.tools': tools,
    'settings.mcp.test': test,
    'settings.mcp.reconnect': reconnect,
    'settings.mcp.enable': refuse(PRESETS_UNSUPPORTED),
    'settings.mcp.disable': refuse(DISABLE_UNSUPPORTED),
    'settings.mcp.oauth_start': refuse(OAUTH_UNSUPPORTED),
    'settings.mcp.oauth_complete': refuse(OAUTH_UNSUPPORTED),
    'settings.mcp.oauth_cancel': refuse(OAUTH_UNSUPPORTED),
  },
};
