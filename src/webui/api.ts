/**
 * The WebUI's settings, skills, automations and MCP API, in nanobot's shapes (its webui/src/lib/api.ts is the
 * client). One handler serves both ways a client reaches it: reads as `GET /api/<route>` (rest.ts) and changes as
 * `webui_request {action, payload}` over the authenticated WebSocket (webui-requests.ts), as nanobot does. Each
 * area is a module (settings-models.ts, skills.ts…) that names its routes and actions; modules.ts lists them.
 */
import type { WebUiBackend } from '../channels/websocket/backend.js';

/** A refusal with the HTTP status nanobot answers (400 bad input, 404 unknown, 409 conflict, 501 not supported). */
export class WebuiApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'WebuiApiError';
  }
}

export interface WebuiApiContext {
  backend: WebUiBackend;
}

/** `GET /api/<route>`: `params` holds the route's `:name` segments (decoded) and the query string. */
export type RouteHandler = (
  context: WebuiApiContext,
  params: { segments: Readonly<Record<string, string>>; query: URLSearchParams },
) => Promise<unknown>;

/** One `webui_request` action; the answer is the `result` of its `webui_response`. */
export type ActionHandler = (context: WebuiApiContext, payload: Readonly<Record<string, unknown>>) => Promise<unknown>;

export interface WebuiApiModule {
  /** Route patterns relative to `/api/`, e.g. `settings/usage` or `webui/skills/:name`. */
  readonly routes?: Readonly<Record<string, RouteHandler>>;
  readonly actions?: Readonly<Record<string, ActionHandler>>;
}

export interface MatchedRoute {
  handler: RouteHandler;
  segments: Record<string, string>;
}

/** The module route matching `path` (the segments after `/api/`, still percent-encoded), if any. */
export function matchRoute(modules: readonly WebuiApiModule[], path: readonly string[]): MatchedRoute | undefined {
  for (const module of modules) {
    for (const [pattern, handler] of Object.entries(module.routes ?? {})) {
      const segments = matchPattern(pattern.split('/'), path);
      if (segments) return { handler, segments };
    }
  }
  return undefined;
}

export function findAction(modules: readonly WebuiApiModule[], action: string): ActionHandler | undefined {
  for (const module of modules) {
    const handler = module.actions?.[action];
    if (handler && Object.hasOwn(module.actions ?? {}, action)) return handler;
  }
  return undefined;
}

function matchPattern(pattern: readonly string[], path: readonly string[]): Record<string, string> | undefined {
  if (pattern.length !== path.length) return undefined;
  const segments: Record<string, string> = {};
  for (const [index, part] of pattern.entries()) {
    const actual = path[index] ?? '';
    if (part.startsWith(':')) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(actual);
      } catch {
        return undefined;
      }
      if (!decoded) return undefined;
      segments[part.slice(1)] = decoded;
    } else if (part !== actual) {
      return undefined;
    }
  }
  return segments;
}

/** A payload member that must be a string (trimmed, non-empty): the 400 nanobot answers otherwise. */
export function requireString(payload: Readonly<Record<string, unknown>>, key: string): string {
  const value = payload[key];
  if (typeof value !== 'string' || !value.trim()) throw new WebuiApiError(400, `missing ${key}`);
  return value.trim();
}

let modules: Promise<readonly WebuiApiModule[]> | undefined;

/**
 * The modules (modules.ts), loaded on the first settings request rather than at start-up: they bring the provider
 * sign-in flows, skill installs and MCP probes, which an idle gateway does not need in memory.
 */
export function webuiApiModules(): Promise<readonly WebuiApiModule[]> {
  modules ??= import('./modules.js').then((loaded) => loaded.WEBUI_API_MODULES);
  return modules;
}
