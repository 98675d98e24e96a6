/**
 * `webui_request {request_id, action, payload}` → `webui_response {request_id, ok, result | error: {status,
 * message}}`: the mutations nanobot's WebUI sends over its authenticated WebSocket (nanobot/channels/websocket/
 * runtime.py, webui/ws_http.py). Chat management is implemented here (`session.delete`, `sidebar.update` — which is
 * also how that WebUI renames a chat: `title_overrides`), the rest by the API modules (src/webui/); an action nanobot
 * knows that no module serves is answered 501 with what to do instead; anything else 404, as nanobot answers.
 */
import { errorMessage } from '../../util/errors.js';
import { findAction, WebuiApiError, webuiApiModules } from '../../webui/api.js';
import type { WebUiBackend } from './backend.js';
import { deleteSession, type SessionsApiOptions } from './sessions-api.js';
import { SidebarStateError } from './sidebar-state.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const ACTION = /^[a-z][a-z0-9_.]{0,127}$/;

/** Actions nanobot's WebUI sends that this version does not carry out (yet). */
export const UNSUPPORTED_ACTIONS: readonly string[] = ['workspace.pick_folder'];
const UNSUPPORTED = new Set(UNSUPPORTED_ACTIONS);

export type WebuiResponse =
  | { event: 'webui_response'; request_id: string; ok: true; result: unknown }
  | { event: 'webui_response'; request_id: string; ok: false; error: { status: number; message: string } };

export interface WebuiRequestContext {
  backend(): WebUiBackend | undefined;
  sessions: SessionsApiOptions;
  /** Tells every WebUI connection the sidebar changed (`sidebar_state_updated {state}`). */
  broadcastSidebar(state: unknown): void;
}

/** The answer to one request, or `{invalidId}` when its `request_id` is unusable (an `error` frame, as nanobot). */
export async function handleWebuiRequest(
  envelope: Record<string, unknown>,
  context: WebuiRequestContext,
): Promise<WebuiResponse | { invalidId: true }> {
  const requestId = envelope.request_id;
  if (typeof requestId !== 'string' || !REQUEST_ID.test(requestId)) return { invalidId: true };
  const fail = (status: number, message: string): WebuiResponse => ({
    event: 'webui_response',
    request_id: requestId,
    ok: false,
    error: { status, message },
  });
  const { action, payload } = envelope;
  if (typeof action !== 'string' || !ACTION.test(action)) return fail(400, 'invalid WebUI mutation action');
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return fail(400, 'WebUI mutation payload must be an object');
  }
  const values = payload as Record<string, unknown>;
  const moduleAction = findAction(await webuiApiModules(), action);
  if (moduleAction) {
    const backend = context.backend();
    if (!backend) return fail(503, 'the gateway is still starting');
    try {
      const result = await moduleAction({ backend }, values);
      return { event: 'webui_response', request_id: requestId, ok: true, result };
    } catch (error) {
      if (error instanceof WebuiApiError) return fail(error.status, error.message);
      return fail(500, `${action} failed: ${errorMessage(error)}`);
    }
  }
  if (UNSUPPORTED.has(action)) {
    return fail(501, `${action} is not supported by nanobot-ts yet; change this in ~/.nanobot/config.json instead`);
  }
  if (action !== 'session.delete' && action !== 'sidebar.update') return fail(404, 'unknown WebUI mutation action');
  const backend = context.backend();
  if (!backend) return fail(503, 'the gateway is still starting');
  const ok = (result: unknown): WebuiResponse => ({ event: 'webui_response', request_id: requestId, ok: true, result });

  if (action === 'session.delete') {
    const key = values.key;
    if (typeof key !== 'string' || !key.trim()) return fail(400, 'missing session key');
    const all = values.delete_automations;
    const answer = await deleteSession(backend, context.sessions, key.trim(), all === true || all === 'true');
    return answer.status === 200 ? ok(answer.body) : fail(answer.status, errorText(answer.body));
  }
  const state = values.state;
  if (state === undefined || state === null) return fail(400, 'missing state');
  if (typeof state !== 'object' || Array.isArray(state)) return fail(400, 'state must be an object');
  try {
    const stored = await context.sessions.sidebar.write(state as Record<string, unknown>);
    context.broadcastSidebar(stored);
    return ok(stored);
  } catch (error) {
    if (error instanceof SidebarStateError) return fail(400, error.message);
    return fail(500, 'failed to write sidebar state');
  }
}

function errorText(body: unknown): string {
  const error = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  return typeof error === 'string' ? error : 'WebUI mutation failed';
}
