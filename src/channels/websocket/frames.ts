/**
 * The WebSocket wire protocol (nanobot's `docs/websocket.md`), as types shared by the server and the WebUI.
 * Every frame is one JSON text message; server frames carry `event`, client envelopes carry `type`.
 * This file has no imports so the browser app can use it too.
 */

/** A chat id (nanobot's rule): also the capability to attach to that conversation. */
export const CHAT_ID_PATTERN = /^[A-Za-z0-9_:-]{1,64}$/;

/** nanobot's snapshot of a chat's sustained goal (its WebUI's goal strip). */
export interface GoalStateBlob {
  active: boolean;
  status?: 'active' | 'blocked';
  ui_summary?: string;
  objective?: string;
  recap?: string;
}

/** An uploaded file's kind (`POST /api/uploads`). */
export interface MediaLink {
  name: string;
  kind: 'image' | 'audio' | 'video' | 'file';
  url: string;
}

/**
 * A file the agent sent (nanobot's `media_urls` item): `url` is a signed, expiring `/api/media/<sig>/<payload>`
 * that needs no token (an `<img src>` cannot send one) and serves only files under the media directory.
 */
export interface MediaUrl {
  url: string;
  name: string;
  kind: 'image' | 'video' | 'file';
}

/** nanobot's tool event: one phase of one tool call (clients key calls by `call_id`). */
export interface ToolEventPayload {
  version: 1;
  phase: 'start' | 'end' | 'error';
  call_id: string;
  name: string;
  /** The call's arguments as an object; the same object in every phase of the call. */
  arguments: Record<string, unknown>;
  /** `end`: the result (a preview); otherwise null. */
  result: string | null;
  /** `error`: what went wrong; otherwise null. */
  error: string | null;
  files: unknown[];
  embeds: unknown[];
}

/** nanobot's file edit: what an edit tool changes in one file (counted from the call; `approximate` when unsure). */
export interface FileEditPayload {
  version: 1;
  call_id: string;
  /** `write_file`, `edit_file` or `apply_patch`. */
  tool: string;
  /** As the call named it. */
  path: string;
  phase: 'start' | 'end' | 'error';
  added: number;
  deleted: number;
  approximate: boolean;
  status: 'editing' | 'done' | 'error';
  error?: string;
}

export type ServerFrame =
  | LifecycleFrame
  | { event: 'ready'; chat_id: string; client_id: string; upload: { path: string } }
  | { event: 'attached'; chat_id: string }
  | {
      event: 'message';
      chat_id: string;
      text: string;
      /** `tool_hint` (a one-line tool call) and `progress` are subordinate trace rows, not replies. */
      kind?: 'tool_hint' | 'progress';
      /** The tool calls a `tool_hint` (phase start) or `progress` (phase end/error) row is about. */
      tool_events?: ToolEventPayload[];
      /** `text`: preformatted plain text (a command's output: keep its lines and `<placeholders>`), not Markdown. */
      render_as?: 'text';
      /** The files' paths on the server (as nanobot sends them); `media_urls` is how a client fetches them. */
      media?: string[];
      media_urls?: MediaUrl[];
      reply_to?: string;
    }
  /** An edit tool's change to files (beside its `tool_events` rows; clients fold the two). */
  | { event: 'file_edit'; chat_id: string; edits: FileEditPayload[] }
  | { event: 'delta'; chat_id: string; text: string; stream_id: string }
  /** Ends one streamed segment; `text`, when present, is the authoritative final text of that segment. */
  | { event: 'stream_end'; chat_id: string; stream_id: string; text?: string }
  | { event: 'reasoning_delta'; chat_id: string; text: string; stream_id: string }
  | { event: 'reasoning_end'; chat_id: string; stream_id: string }
  /** The agent finished answering (the stop button can go). */
  | { event: 'turn_end'; chat_id: string }
  /** What another connection on the same chat sent (a second tab). */
  | { event: 'user_message'; chat_id: string; text: string }
  /**
   * A request the server refused, or (with `kind`) a turn that failed: `kind` is the provider error kind (`auth`,
   * `network`, …) or `internal`; `hint` says what to fix (`Check providers.openai.apiKey …`).
   */
  | { event: 'error'; detail: string; chat_id?: string; kind?: string; hint?: string; reason?: string }
  /** The answer to a `webui_request` (nanobot's chat-management mutations). */
  /** nanobot's answer to voice input; `detail` is its code (`not_configured`, `invalid_request`, …). */
  | { event: 'transcription_result'; request_id: string; text: string }
  | { event: 'transcription_error'; request_id?: string; detail: string; provider?: string; message?: string }
  | { event: 'webui_response'; request_id: string; ok: true; result: unknown }
  | { event: 'webui_response'; request_id: string; ok: false; error: { status: number; message: string } }
  /** The sidebar state changed (pins, titles, …): every WebUI connection gets the new state. */
  | { event: 'sidebar_state_updated'; state: unknown };

/**
 * nanobot's turn lifecycle (its WebUI and TUI follow a turn by these). Every frame of a turn that a client started
 * with a `turn_id` carries that `turn_id` back, these and the ones above alike.
 */
export type LifecycleFrame =
  /** The message with this `turn_id` was taken: it starts a turn (`starts_turn`), now or after the running one. */
  | {
      event: 'message_accepted';
      chat_id: string;
      turn_id: string;
      starts_turn: boolean;
      active_turn_id?: string;
      /** When the active turn started running (Unix seconds), once it has. */
      started_at?: number;
    }
  /** What another connection on the same chat sent (a second tab), with the turn it starts. */
  | {
      event: 'user_message';
      chat_id: string;
      text: string;
      starts_turn: boolean;
      turn_id?: string;
      active_turn_id?: string;
    }
  /** A turn started running (`started_at`: Unix seconds) or the chat went idle. */
  | { event: 'goal_status'; chat_id: string; status: 'running' | 'idle'; started_at?: number; turn_id?: string }
  /** The model answering this chat's turn. */
  | { event: 'turn_model_updated'; chat_id: string; model_name: string; context_window_tokens?: number }
  /** The gateway's model changed (a config reload); sent to every connection. */
  | { event: 'runtime_model_updated'; model_name: string }
  /** A chat's row changed (`thread`: new messages, `metadata`: title, scope); sent to every connection. */
  | { event: 'session_updated'; chat_id: string; scope?: 'thread' | 'metadata' }
  /** The end of a turn started with a `turn_id`; `goal_state`: the chat's sustained goal after it. */
  | { event: 'turn_end'; chat_id: string; turn_id?: string; goal_state?: GoalStateBlob }
  /** The chat's sustained goal (nanobot's GoalStateWsPayload), on attach while one is active or blocked. */
  | { event: 'goal_state'; chat_id: string; goal_state: GoalStateBlob }
  /** A refused frame or failed turn, naming the send it belongs to. */
  | {
      event: 'error';
      detail: string;
      chat_id?: string;
      turn_id?: string;
      kind?: string;
      hint?: string;
      reason?: string;
    };

/** An attachment sent inline in a `message` (nanobot's WebUI): a `data:` URL and the file's name. */
export interface InlineAttachment {
  data_url: string;
  name?: string;
}

/**
 * Client envelopes. Keys not listed here are ignored, as nanobot's gateway ignores them (its clients send
 * `workspace_scope`, `cli_apps`, `quoted_context` …); what is listed is validated.
 */
export type ClientEnvelope =
  | { type: 'new_chat' }
  | { type: 'attach'; chat_id: string }
  | { type: 'detach'; chat_id: string }
  /**
   * `media`: references returned by `POST /api/uploads` (or inline attachments). `turn_id`: the client's id for the
   * turn this message starts; every frame of that turn carries it back. `webui`: sent by nanobot's clients.
   */
  | {
      type: 'message';
      chat_id: string;
      content: string;
      media?: (string | InlineAttachment)[];
      turn_id?: string;
      webui?: boolean;
    }
  /** A chat-management mutation (`session.delete`, `sidebar.update`, …), answered by `webui_response`. */
  | { type: 'webui_request'; request_id: unknown; action: unknown; payload: unknown; [key: string]: unknown }
  /** Voice input (nanobot's `transcribe_audio {request_id, data_url, duration_ms}`), answered `transcription_*`. */
  | { type: 'transcribe_audio'; request_id?: unknown; [key: string]: unknown }
  /** A new chat from another's messages before a user message (nanobot's `/branch`), answered like `new_chat`. */
  | { type: 'fork_chat'; source_chat_id?: unknown; before_user_index?: unknown; [key: string]: unknown };

/** A client's turn id (nanobot's rule); anything else is replaced by a fresh one. */
export const TURN_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

// ── REST (`/api/*`, `Authorization: Bearer <token>`) ───────────────────────────────────────────────────────────

/** nanobot's `workspace_scope` payload of a chat: its own (session metadata) or the gateway's workspace. */
export interface WorkspaceScope {
  project_path: string;
  project_name: string;
  access_mode: 'restricted' | 'full';
  restrict_to_workspace: boolean;
}

/** A `GET /api/sessions` row, in nanobot's shape (`key` is `websocket:<chat_id>`; `title` is "" until named). */
export interface SessionListRow {
  key: string;
  created_at: string | null;
  updated_at: string | null;
  title: string;
  preview: string;
  model_preset: string | null;
  workspace_scope: WorkspaceScope;
  run_started_at?: number;
}

/** One row of nanobot's `UIMessage` (a `webui-thread` message): the fields this WebUI reads; others pass through. */
export interface ThreadMessage {
  id: string;
  role: string;
  content: string;
  kind?: string;
  reasoning?: string;
  media?: { kind: string; url?: string; name?: string }[];
  toolEvents?: {
    phase: string;
    call_id?: string;
    name: string;
    arguments?: unknown;
    result?: unknown;
    error?: unknown;
  }[];
  [key: string]: unknown;
}

/** `GET /api/sessions/<key>/webui-thread` (nanobot's `WebuiThreadPersistedPayload`). */
export interface ThreadResponse {
  schemaVersion: number;
  sessionKey: string;
  messages: ThreadMessage[];
  completed_turn_ids: string[];
  has_pending_tool_calls: boolean;
  active_turn_id: string | null;
  page?: {
    before_cursor: string | null;
    has_more_before: boolean;
    loaded_message_count: number;
    user_message_offset: number;
  };
  workspace_scope?: WorkspaceScope;
}

/** nanobot's sidebar state (`GET /api/webui/sidebar-state`, `sidebar.update`): the part this WebUI uses. */
export interface SidebarStateView {
  title_overrides: Record<string, string>;
  [key: string]: unknown;
}

export interface UploadResult {
  id: string;
  name: string;
  kind: MediaLink['kind'];
  size: number;
}

export interface StatusReport {
  model: string;
  provider: string;
  context: { used: number; window: number } | null;
  channels: Record<string, string>;
  cron: { id: string; name: string; enabled: boolean; schedule: string; next_run_at: string | null }[];
}
