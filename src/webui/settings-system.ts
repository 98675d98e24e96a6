/**
 * The rest of nanobot's system settings, in its shapes:
 *   GET /api/settings/usage           tokens per day from `<dataDir>/webui/token-usage.json` (session/token-usage.ts)
 *   GET /api/settings/version-check   `{updateAvailable: null}`: this version never asks a registry (offline-safe)
 *   GET /api/settings/cli-apps        nanobot's installable CLI apps: none here, so its empty catalog
 *   GET /api/settings/api-service     the OpenAI-compatible API (`nanobot serve`) as configured, and whether it answers
 *   GET /api/workspaces               the gateway's workspace; project switching and full access are not offered
 * and the actions this version refuses with what to do instead: settings.cli_app.*, settings.api_service.start/stop
 * (nanobot runs `nanobot serve` as a child of its WebUI; here it is its own command, so a service manager or the
 * user starts it).
 */
import type { WebUiBackend } from '../channels/websocket/backend.js';
import { readTokenUsage, tokenUsagePayload } from '../session/token-usage.js';
import { type ActionHandler, WebuiApiError, type WebuiApiModule } from './api.js';

const PROBE_TIMEOUT_MS = 1_000;

function loadedOf(backend: WebUiBackend) {
  const config = backend.config?.();
  if (!config) throw new WebuiApiError(503, 'the settings API needs a running gateway');
  return config.loaded();
}

/** nanobot's hint of the API key: its ends, only when long enough that they give little away. */
function apiKeyHint(key: string | null | undefined): string | null {
  const value = key?.trim() ?? '';
  if (!value) return null;
  return value.length >= 16 ? `${value.slice(0, 3)}...${value.slice(-4)}` : 'configured';
}

function urlHost(host: string): string {
  const connect = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return connect.includes(':') && !connect.startsWith('[') ? `[${connect}]` : connect;
}

/** Whether `nanobot serve` answers at the configured address (its /health needs no key). */
async function apiAnswers(base: string): Promise<boolean> {
  try {
    const response = await fetch(`${base}/health`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

async function apiService(backend: WebUiBackend) {
  const { api } = loadedOf(backend).config;
  const base = `http://${urlHost(api.host)}:${api.port}`;
  return {
    installed: true,
    running: await apiAnswers(base),
    // This gateway never starts or stops it.
    managed: false,
    host: api.host,
    port: api.port,
    timeout: api.timeout,
    api_key_hint: apiKeyHint(api.apiKey),
    endpoint: `${base}/v1`,
    command: 'nanobot serve',
    log_path: null,
  };
}

const refuseApiService =
  (verb: string): ActionHandler =>
  async ({ backend }) => {
    const { endpoint } = await apiService(backend);
    throw new WebuiApiError(
      501,
      `nanobot-ts does not ${verb} the API from the WebUI: run \`nanobot serve\` on the gateway's machine ` +
        `(it serves ${endpoint}; api.host, api.port and api.apiKey in config.json set where and with which key).`,
    );
  };

const noCliApps: ActionHandler = async () => {
  throw new WebuiApiError(
    501,
    'nanobot-ts has no CLI app catalog: install command-line tools yourself; the agent runs them with its exec tool.',
  );
};

export const settingsSystemModule: WebuiApiModule = {
  routes: {
    'settings/usage': async ({ backend }) => {
      const loaded = loadedOf(backend);
      return tokenUsagePayload(await readTokenUsage(loaded.dataDir), {
        timeZone: loaded.config.agents.defaults.timezone,
      });
    },
    'settings/version-check': async () => ({ updateAvailable: null }),
    'settings/cli-apps': async () => ({
      apps: [],
      installed_count: 0,
      catalog_updated_at: null,
      catalog_refresh_pending: false,
    }),
    'settings/api-service': async ({ backend }) => apiService(backend),
    workspaces: async ({ backend }) => ({
      schema_version: 1,
      default_access_mode: 'default',
      default_scope: backend.workspaceScope(),
      // A chat runs in the gateway's workspace under tools.restrictToWorkspace; the WebUI cannot change either.
      controls: { can_change_project: false, can_use_full_access: false, can_pick_folder: false },
    }),
  },
  actions: {
    'settings.api_service.start': refuseApiService('start'),
    'settings.api_service.stop': refuseApiService('stop'),
    'settings.cli_app.install': noCliApps,
    'settings.cli_app.update': noCliApps,
    'settings.cli_app.uninstall': noCliApps,
    'settings.cli_app.test': noCliApps,
  },
};
