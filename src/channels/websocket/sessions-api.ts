/**
 * The chat list and old chats, as nanobot's clients read them (nanobot/webui/session_list_index.py, ws_http.py):
 *   GET /api/sessions                          {"sessions": [row…]}, newest first, WebSocket chats only
 *   GET /api/sessions/<key>/webui-thread       ?limit&direction=latest&before → WebuiThreadPersistedPayload; 404 none
 *   GET /api/sessions/<key>/context            what the session replays (summary + messages, token estimate)
 *   GET /api/sessions/<key>/automations        the cron jobs bound to the chat
 *   GET /api/webui/sidebar-state               pins, title overrides, … (written by `sidebar.update`)
 * `<key>` is the URL-encoded session key (`websocket:<chat_id>`); another channel's key is "session not found".
 */
import { estimateTextTokens } from '../../memory/tokens.js';
import type { Session } from '../../session/types.js';
import { sessionTitle } from '../../session/types.js';
import { WebuiApiError } from '../../webui/api.js';
import { removeSessionAutomations, sessionAutomationRows } from '../../webui/automations.js';
import type { WebUiBackend } from './backend.js';
import { CHAT_ID_PATTERN, type SessionListRow, type WorkspaceScope } from './frames.js';
import type { SidebarStateStore } from './sidebar-state.js';
import { buildThread, threadQuery, threadQueryError } from './thread.js';
import type { MediaSign } from './thread-fold.js';
import type { WebuiTranscripts } from './transcript.js';

/** nanobot's session metadata key for the chat's model preset, then ours (`/model` writes `model_preset`). */
const MODEL_PRESET_KEYS = ['_nanobot_model_preset', 'model_preset'];
const API_KEY_PATTERN = /^[A-Za-z0-9_:.-]{1,128}$/;

export interface SessionsApiOptions {
  /** `websocket`: keys are `websocket:<chat_id>`. */
  channel: string;
  transcripts: WebuiTranscripts;
  sidebar: SidebarStateStore;
  /** Signed media URLs for the files of old chats (the channel's MediaSigner). */
  signMedia?: MediaSign;
  /** When the chat's running turn started (epoch seconds), while one runs (the channel's turn lifecycle). */
  runStartedAt?(chatId: string): number | undefined;
  /** The turn that owns the chat now, if one runs or waits. */
  activeTurn?(chatId: string): string | undefined;
}

export interface ApiAnswer {
  status: number;
  body: unknown;
}

export type { SessionListRow, WorkspaceScope };

const notFound = (message = 'session not found'): ApiAnswer => ({ status: 404, body: { error: message } });

/** The decoded session key of a `/api/sessions/<key>/…` route, or the refusal. */
export function sessionKeyFrom(raw: string, channel: string): { key: string; chatId: string } | ApiAnswer {
  let key: string;
  try {
    key = decodeURIComponent(raw);
  } catch {
    return { status: 400, body: { error: 'invalid session key' } };
  }
  if (!API_KEY_PATTERN.test(key)) return { status: 400, body: { error: 'invalid session key' } };
  const prefix = `${channel}:`;
  const chatId = key.startsWith(prefix) ? key.slice(prefix.length) : '';
  if (!CHAT_ID_PATTERN.test(chatId)) return notFound();
  return { key, chatId };
}

export async function listSessions(backend: WebUiBackend, options: SessionsApiOptions): Promise<ApiAnswer> {
  const prefix = `${options.channel}:`;
  const rows: SessionListRow[] = [];
  const listed = new Set<string>();
  for (const summary of await backend.sessions().list()) {
    if (!summary.key.startsWith(prefix) || !CHAT_ID_PATTERN.test(summary.key.slice(prefix.length))) continue;
    const session = await backend.sessions().load(summary.key);
    listed.add(summary.key);
    rows.push(rowOf(session, backend, summary.preview ?? '', options));
  }
  // A chat nanobot's WebUI has a transcript of but no session file for (deleted history, a fresh chat) still lists.
  for (const chatId of options.transcripts.chats()) {
    const key = `${prefix}${chatId}`;
    if (listed.has(key) || !CHAT_ID_PATTERN.test(chatId)) continue;
    const lines = options.transcripts.read(chatId) ?? [];
    const first = lines.find((r) => typeof r.created_at_ms === 'number');
    const last = lines.findLast((r) => typeof r.created_at_ms === 'number');
    const user = lines.find((r) => r.event === 'user' && typeof r.text === 'string' && r.text.trim());
    const iso = (r: Record<string, unknown> | undefined) =>
      r ? new Date(r.created_at_ms as number).toISOString() : null;
    rows.push({
      key,
      created_at: iso(first),
      updated_at: iso(last),
      title: '',
      preview: user ? oneLine(String(user.text)) : '',
      model_preset: null,
      workspace_scope: backend.workspaceScope(),
    });
  }
  rows.sort((a, b) => (b.updated_at ?? '').localeCompare(a.updated_at ?? ''));
  return { status: 200, body: { sessions: rows } };
}

function rowOf(session: Session, backend: WebUiBackend, preview: string, options: SessionsApiOptions): SessionListRow {
  const preset = MODEL_PRESET_KEYS.map((k) => session.metadata[k]).find((v) => typeof v === 'string' && v.trim());
  const row: SessionListRow = {
    key: session.key,
    created_at: session.createdAt,
    updated_at: session.updatedAt,
    title: sessionTitle(session.metadata) ?? '',
    preview,
    model_preset: typeof preset === 'string' && preset.trim() ? preset.trim() : null,
    workspace_scope: scopeOf(session, backend),
  };
  const chatId = session.key.slice(options.channel.length + 1);
  const started = options.runStartedAt?.(chatId) ?? backend.runStartedAt?.(session.key);
  if (started !== undefined) row.run_started_at = started;
  return row;
}

function scopeOf(session: Session, backend: WebUiBackend): WorkspaceScope {
  const fallback = backend.workspaceScope();
  const own = session.metadata.workspace_scope;
  if (typeof own !== 'object' || own === null) return fallback;
  const { project_path, access_mode } = own as { project_path?: unknown; access_mode?: unknown };
  if (typeof project_path !== 'string' || !project_path) return fallback;
  return {
    ...fallback,
    project_path,
    project_name: project_path.split(/[\\/]/).filter(Boolean).at(-1) ?? project_path,
    ...(access_mode === 'full' || access_mode === 'restricted' ? { access_mode } : {}),
  };
}

export async function webuiThread(
  backend: WebUiBackend,
  options: SessionsApiOptions,
  raw: string,
  params: URLSearchParams,
): Promise<ApiAnswer> {
  const target = sessionKeyFrom(raw, options.channel);
  if ('status' in target) return target;
  const refused = threadQueryError(params);
  if (refused) return { status: 400, body: { error: refused } };
  const session = await backend.sessions().load(target.key);
  const thread = buildThread(
    target.key,
    options.transcripts.read(target.chatId),
    session.messages,
    threadQuery(params),
    backend.isBusy(target.key),
    options.signMedia,
    options.activeTurn?.(target.chatId),
  );
  if (!thread) return notFound('webui thread not found');
  return { status: 200, body: { ...thread, workspace_scope: scopeOf(session, backend) } };
}

/** What the session replays to the model (nanobot's `session_context_payload`; the TUI's context view reads it). */
export async function sessionContext(backend: WebUiBackend, options: SessionsApiOptions, raw: string) {
  const target = sessionKeyFrom(raw, options.channel);
  if ('status' in target) return target;
  const session = await backend.sessions().load(target.key);
  if (session.messages.length === 0) return notFound();
  const summary = session.metadata._last_summary;
  const { text, last_active } = (typeof summary === 'object' && summary !== null ? summary : {}) as {
    text?: unknown;
    last_active?: unknown;
  };
  const summaryText = typeof text === 'string' ? text.trim() : '';
  const archived = Math.min(session.lastConsolidated, session.messages.length);
  const replay = session.messages.slice(archived);
  const replayTokens = replay.reduce((n, m) => n + estimateTextTokens(JSON.stringify(m.content ?? '')), 0);
  const summaryTokens = summaryText ? estimateTextTokens(summaryText) : 0;
  const usage = session.metadata._last_usage;
  const lastUsage =
    typeof usage === 'object' && usage !== null
      ? Object.fromEntries(Object.entries(usage).filter(([, v]) => Number.isInteger(v) && (v as number) >= 0))
      : null;
  return {
    status: 200,
    body: {
      schema_version: 1,
      session_key: target.key,
      total_messages: session.messages.length,
      archived_messages: archived,
      replay_messages: replay.length,
      estimated_replay_tokens: replayTokens,
      estimated_summary_tokens: summaryTokens,
      estimated_session_tokens: replayTokens + summaryTokens,
      archived_summary: summaryText ? summaryText.slice(0, 4000) : null,
      archived_summary_at: typeof last_active === 'string' ? last_active : null,
      last_usage: lastUsage,
    },
  } satisfies ApiAnswer;
}

/** The chat's automations (its bound cron jobs and local triggers), as nanobot's `session_automations_payload`. */
export async function sessionAutomations(backend: WebUiBackend, options: SessionsApiOptions, raw: string) {
  const target = sessionKeyFrom(raw, options.channel);
  if ('status' in target) return target;
  return { status: 200, body: { jobs: await sessionAutomationRows(backend, target.key) } } satisfies ApiAnswer;
}

/** Deletes the session and nanobot's transcript of it: `{"deleted": bool}`, as nanobot answers `session.delete`. */
export async function deleteSession(
  backend: WebUiBackend,
  options: SessionsApiOptions,
  rawKey: string,
  deleteAutomations = false,
): Promise<ApiAnswer> {
  const target = sessionKeyFrom(encodeURIComponent(rawKey), options.channel);
  if ('status' in target) return target;
  // The running turn saves its own copy of the session at the end, which would undo the delete.
  if (backend.isBusy(target.key)) {
    return { status: 409, body: { error: 'the agent is answering in this chat; stop it or try again after' } };
  }
  // Jobs bound to the chat would go on answering into a chat that is gone: the user confirms removing them too.
  const automations = await sessionAutomationRows(backend, target.key);
  if (automations.length && !deleteAutomations)
    return { status: 200, body: { deleted: false, blocked_by_automations: true, automations } };
  if (automations.length) {
    try {
      await removeSessionAutomations(backend, target.key);
    } catch (error) {
      if (error instanceof WebuiApiError) return { status: error.status, body: { error: error.message } };
      throw error;
    }
  }
  const sessions = backend.sessions();
  const existed = (await sessions.load(target.key)).messages.length > 0;
  await sessions.delete(target.key);
  const transcript = options.transcripts.remove(target.chatId);
  return { status: 200, body: { deleted: existed || transcript } };
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}
