/** Sessions: one conversation's messages plus metadata, stored per key (`channel:chat_id`, `cli:direct`, …). */
import type { ChatMessage } from '../providers/types.js';
import { stripRuntimeContext } from './runtime-context.js';

export interface Session {
  key: string;
  createdAt: string;
  updatedAt: string;
  /** Free-form state: `pending_user_turn`, `runtime_checkpoint`, `_last_summary`, `last_channel`, … */
  metadata: Record<string, unknown>;
  /** Index of the first message not yet consolidated into history.jsonl. */
  lastConsolidated: number;
  messages: ChatMessage[];
  /** Typed lines this version does not use (e.g. nanobot's `provider_state`), written back unchanged. */
  preserved?: Record<string, unknown>[];
}

export interface SessionSummary {
  key: string;
  updatedAt: string;
  messageCount: number;
  /** `metadata.title` (the WebUI names chats), when set. */
  title?: string;
  /** The start of the first user message (what nanobot's session list shows), when there is one. */
  preview?: string;
}

/** A session's title as nanobot shows it: a model-made one without its `<think>` blocks, a user's as typed. */
export function sessionTitle(metadata: Record<string, unknown>): string | undefined {
  const { title } = metadata;
  if (typeof title !== 'string') return undefined;
  const shown = metadata.title_user_edited === true ? title : title.replace(/<think>[\s\S]*?<\/think>/g, '');
  return shown.trim() || undefined;
}

export interface SessionStore {
  /**
   * Loads a session, or returns a fresh empty one when none is stored. Never throws on a damaged file.
   * Each call returns a new object; keep one per key while a turn runs and save that one.
   */
  load(key: string): Promise<Session>;
  /**
   * Persists what changed since this object was loaded or saved: appends new messages (and a metadata line when
   * metadata or `lastConsolidated` changed). Saved messages are treated as immutable: removing or replacing them
   * (e.g. `/new` emptying the session) makes this an atomic rewrite, but an in-place edit goes unnoticed, so call
   * `rewrite` after one. A session object never loaded from this store is written out whole.
   */
  save(session: Session): Promise<void>;
  /** Rewrites the whole session file atomically (after editing saved messages in place). */
  rewrite(session: Session): Promise<void>;
  list(): Promise<SessionSummary[]>;
  delete(key: string): Promise<void>;
}

export function newSession(key: string, now = new Date()): Session {
  const at = now.toISOString();
  return { key, createdAt: at, updatedAt: at, metadata: {}, lastConsolidated: 0, messages: [] };
}

/** Work a session has going beyond one reply (subagents, a sustained goal): /stop ends it, /status reports it. */
export interface SessionWork {
  /** Lines for /status (none when idle). */
  status(session: Session): string[];
  /** Ends this work for the session; returns a sentence for the /stop reply, or undefined when nothing was running. */
  stop(sessionKey: string): Promise<string | undefined>;
}

const PREVIEW_MAX = 120;

/** `[image: /home/…/media/websocket/photo.png]`, the line a turn keeps per attachment (agent/context.ts). */
const ATTACHMENT_MARKER = /\[(image|file): ([^\]\n]+)\]/g;

/** A chat list shows the attachment's name, never where it lies on the server. */
function attachmentName(_marker: string, kind: string, file: string): string {
  return `[${kind}: ${file.trim().split(/[\\/]/).filter(Boolean).at(-1) ?? ''}]`;
}

/** The first user message's text, runtime context left out, on one line (nanobot's session-list preview). */
export function sessionPreview(messages: readonly ChatMessage[]): string | undefined {
  for (const message of messages) {
    if (message.role !== 'user') continue;
    const { content } = message;
    const raw =
      typeof content === 'string'
        ? content
        : Array.isArray(content)
          ? content.map((part) => (part.type === 'text' ? part.text : '')).join(' ')
          : '';
    const text = stripRuntimeContext(raw).replace(ATTACHMENT_MARKER, attachmentName).replace(/\s+/g, ' ').trim();
    if (text) return text.length > PREVIEW_MAX ? `${text.slice(0, PREVIEW_MAX - 1).trimEnd()}…` : text;
  }
  return undefined;
}
