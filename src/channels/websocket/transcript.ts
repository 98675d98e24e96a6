/**
 * nanobot's WebUI transcript of a WebSocket chat: `~/.nanobot/webui/<safe session key>.jsonl`, one event per line
 * (`user`, the reply as `message` or `stream_end` with its whole text, `turn_end`), each with `created_at_ms`. nanobot's
 * WebUI shows a chat from this file (filling in user turns from the session), so chats continued here show there
 * too. Appends only, one whole line per write (O_APPEND), like nanobot's own writer; deltas are never recorded.
 */
import { closeSync, constants, fstatSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { appendWholeSync } from '../../security/workspace-file-ops.js';
import type { Logger } from '../../util/log.js';
import type { ServerFrame } from './frames.js';

/** nanobot's `SessionManager.safe_key`: `:` and the other characters unsafe in file names become `_`. */
export function transcriptStem(sessionKey: string): string {
  return sessionKey.replace(/[<>:"/\\|?*]/g, '_').trim();
}

/** nanobot refuses lines over this size; a longer reply is left out of the transcript (the session keeps it). */
const MAX_LINE_BYTES = 8 * 1024 * 1024;

export type TranscriptRecord = Record<string, unknown> & { event: string; chat_id: string };

export class WebuiTranscripts {
  constructor(
    /** `~/.nanobot/webui`. */
    readonly dir: string,
    private readonly channel: string,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  pathFor(chatId: string): string {
    return join(this.dir, `${transcriptStem(`${this.channel}:${chatId}`)}.jsonl`);
  }

  /** The user's message, in nanobot's `user` event shape. */
  user(chatId: string, text: string, mediaPaths: readonly string[]): void {
    if (!text && mediaPaths.length === 0) return;
    this.append({
      event: 'user',
      chat_id: chatId,
      text,
      ...(mediaPaths.length ? { media_paths: [...mediaPaths] } : {}),
    });
  }

  /** What nanobot keeps of the frames it sends: whole replies and turn ends, no deltas, no activity. */
  frame(frame: ServerFrame, mediaPaths: readonly string[]): void {
    if (!('chat_id' in frame) || typeof frame.chat_id !== 'string') return;
    const chat_id = frame.chat_id;
    const media = mediaPaths.length ? { media: [...mediaPaths] } : {};
    if (frame.event === 'message' && frame.kind === undefined) {
      this.append({ event: 'message', chat_id, text: frame.text, ...media });
    } else if (frame.event === 'stream_end' && typeof frame.text === 'string') {
      this.append({ event: 'stream_end', chat_id, stream_id: frame.stream_id, text: frame.text, ...media });
    } else if (frame.event === 'turn_end') {
      this.append({ event: 'turn_end', chat_id });
    }
  }

  private append(record: TranscriptRecord): void {
    const path = this.pathFor(record.chat_id);
    const line = Buffer.from(`${JSON.stringify({ ...record, created_at_ms: this.now() })}\n`, 'utf8');
    if (line.length > MAX_LINE_BYTES) {
      this.log.warn(`WebUI transcript ${path}: a ${line.length}-byte event is too large for it; left out`);
      return;
    }
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const fd = openSync(
        path,
        constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
        0o600,
      );
      try {
        appendWholeSync(fd, line, { path, restoreTo: fstatSync(fd).size, fsync: true });
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      // The session has the turn; only nanobot's WebUI view of it is missing.
      this.log.warn(`WebUI transcript ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
