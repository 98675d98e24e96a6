/** Small helpers the MCP and skills modules share for the config: the live access, and blocks of the file's tree. */
import type { WebUiBackend } from '../channels/websocket/backend.js';
import { WebuiApiError } from './api.js';
import type { ConfigAccess } from './config-access.js';

export function configOf(backend: WebUiBackend): ConfigAccess {
  const access = backend.config?.();
  if (!access) throw new WebuiApiError(503, 'the gateway is still starting');
  return access;
}

/** The object at `key` of `parent` (a block of config.json's tree), created when missing. */
export function childOf(parent: Record<string, unknown>, key: string): Record<string, unknown> {
  const value = parent[key];
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  const created: Record<string, unknown> = {};
  parent[key] = created;
  return created;
}
