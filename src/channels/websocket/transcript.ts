/**
 * nanobot's WebUI transcript of a WebSocket chat: `~/.nanobot/webui/<safe session key>.jsonl`, one event per line
 * (`user`, the reply as `message` or `stream_end` with its whole text, tool activity as `message` rows with
 * `tool_events` and `file_edit` rows, whole `reasoning_end` segments, `turn_end`), each with `created_at_ms`. nanobot's
 * WebUI shows a chat from this file (filling in user turns from the session), so chats continued here show there
 * too. Appends only, one whole line per write (O_APPEND), like nanobot's own writer; deltas are never recorded.
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { join } from 'node:path';
import { commandWord } from '../../bus/priority.js';
import { appendWholeSync } from '../../security/workspace-file-ops.js';
import { writeFileAtomic } from '../../util/fs.js';
import type { Logger } from '../../util/log.js';
import type { ServerFrame } from './frames.js';

/** nanobot's `SessionManager.safe_key`: `:` and the other characters unsafe in file names become `_`. */
export function transcriptStem(sessionKey: string): string {
  return sessionKey.replace(/[<>:"/\\|?*]/g, '_').trim();
}

/** nanobot refuses lines over this size; a longer reply is left out of the transcript (the session keeps it). */
const MAX_LINE_BYTES = 8 * 1024 * 1024;

/** A file or directory that is not a symbolic link (nanobot skips links in ~/.nanobot/webui too). */
function isPlain(path: string, kind: 'file' | 'dir'): boolean {
  try {
    const stat = lstatSync(path);
    return kind === 'file' ? stat.isFile() : stat.isDirectory();
  } catch {
    return false;
  }
}

function pick(record: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (record[key] !== undefined) out[key] = record[key];
  return out;
}

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

  /** nanobot rotates long transcripts into `<stem>.segments/NNNNNN.jsonl`, read before the active file. */
  private segmentsDir(chatId: string): string {
    return join(this.dir, `${transcriptStem(`${this.channel}:${chatId}`)}.segments`);
  }

  /** The chats of this channel that have a transcript here (nanobot's WebUI lists them even without a session). */
  chats(): string[] {
    const prefix = transcriptStem(`${this.channel}:`);
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const chats = new Set<string>();
    for (const name of names) {
      const stem = name.endsWith('.jsonl') ? name.slice(0, -6) : name.endsWith('.segments') ? name.slice(0, -9) : '';
      if (!stem.startsWith(prefix) || stem === prefix) continue;
      if (!isPlain(join(this.dir, name), name.endsWith('.jsonl') ? 'file' : 'dir')) continue;
      chats.add(stem.slice(prefix.length));
    }
    return [...chats].sort();
  }

  /** Every record of the chat's transcript (segments, then the active file), or undefined when it has none. */
  read(chatId: string): Record<string, unknown>[] | undefined {
    const files: string[] = [];
    const segments = this.segmentsDir(chatId);
    if (isPlain(segments, 'dir')) {
      for (const name of readdirSync(segments).sort()) {
        if (/^\d{6}\.jsonl$/.test(name) && isPlain(join(segments, name), 'file')) files.push(join(segments, name));
      }
    }
    if (isPlain(this.pathFor(chatId), 'file')) files.push(this.pathFor(chatId));
    if (files.length === 0) return undefined;
    const records: Record<string, unknown>[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (error) {
        this.log.warn(`WebUI transcript ${file}: ${error instanceof Error ? error.message : String(error)}`);
        continue;
      }
      for (const line of text.split('\n')) {
        if (!line.trim()) continue;
        try {
          const value: unknown = JSON.parse(line);
          if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
            records.push(value as Record<string, unknown>);
          }
        } catch {
          // A torn or foreign line: nanobot skips it too.
        }
      }
    }
    return records;
  }

  /** Deletes the chat's transcript (and nanobot's rotated segments and legacy `.json` snapshot). */
  remove(chatId: string): boolean {
    const stem = join(this.dir, transcriptStem(`${this.channel}:${chatId}`));
    let removed = false;
    for (const path of [`${stem}.jsonl`, `${stem}.json`]) {
      if (!isPlain(path, 'file')) continue;
      rmSync(path, { force: true });
      removed = true;
    }
    if (isPlain(this.segmentsDir(chatId), 'dir')) {
      rmSync(this.segmentsDir(chatId), { recursive: true, force: true });
      removed = true;
    }
    return removed;
  }

  /**
   * Writes the chat's whole transcript at once (a forked chat's), atomically: readers see no file or all of it.
   * Rows without `created_at_ms` get the current time.
   */
  async replace(chatId: string, records: readonly TranscriptRecord[]): Promise<void> {
    const now = this.now();
    const text = records.map((r) => `${JSON.stringify({ created_at_ms: now, ...r, chat_id: chatId })}\n`).join('');
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(this.pathFor(chatId), text, 0o600);
  }

  /**
   * The user's message, in nanobot's `user` event shape. A bare `/stop` is not kept (as nanobot does): it is a
   * control, and a reopened chat shows the stopped turn without it.
   */
  user(chatId: string, text: string, mediaPaths: readonly string[]): void {
    if (!text && mediaPaths.length === 0) return;
    if (mediaPaths.length === 0 && commandWord(text) === '/stop') return;
    this.append({
      event: 'user',
      chat_id: chatId,
      text,
      ...(mediaPaths.length ? { media_paths: [...mediaPaths] } : {}),
    });
  }

  /** Reasoning streamed so far, per `chat_id` + `stream_id`: `reasoning_end` records it whole (nanobot's way). */
  private readonly reasoning = new Map<string, string>();
  /** Answer text streamed so far, for a `stream_end` that carries none. */
  private readonly streamed = new Map<string, string>();

  /**
   * What nanobot keeps of the frames it sends: whole replies, trace rows with their `tool_events`, whole reasoning
   * segments, file edits and turn ends; no deltas.
   */
  frame(frame: ServerFrame, mediaPaths: readonly string[]): void {
    if (!('chat_id' in frame) || typeof frame.chat_id !== 'string') return;
    const chat_id = frame.chat_id;
    const media = mediaPaths.length ? { media: [...mediaPaths] } : {};
    const wire = frame as Record<string, unknown>;
    const extra = pick(wire, ['turn_id', 'latency_ms', 'tool_events', 'media_urls', 'reply_to']);
    switch (frame.event) {
      case 'message':
        this.append({
          event: 'message',
          chat_id,
          text: frame.text,
          ...(frame.kind ? { kind: frame.kind } : {}),
          ...extra,
          ...media,
        });
        return;
      case 'delta': {
        const key = `${chat_id}\u0000${frame.stream_id}`;
        this.streamed.set(key, (this.streamed.get(key) ?? '') + frame.text);
        return;
      }
      case 'stream_end': {
        const key = `${chat_id}\u0000${frame.stream_id}`;
        const text = typeof frame.text === 'string' ? frame.text : this.streamed.get(key);
        this.streamed.delete(key);
        if (text !== undefined) {
          this.append({ event: 'stream_end', chat_id, stream_id: frame.stream_id, text, ...extra, ...media });
        }
        return;
      }
      case 'reasoning_delta': {
        const key = `${chat_id}\u0000${frame.stream_id}`;
        this.reasoning.set(key, (this.reasoning.get(key) ?? '') + frame.text);
        return;
      }
      case 'reasoning_end': {
        const key = `${chat_id}\u0000${frame.stream_id}`;
        const text = this.reasoning.get(key);
        this.reasoning.delete(key);
        this.append({
          event: 'reasoning_end',
          chat_id,
          stream_id: frame.stream_id,
          ...(text ? { text } : {}),
          ...extra,
        });
        return;
      }
      case 'file_edit':
        this.append({ event: 'file_edit', chat_id, edits: frame.edits });
        return;
      case 'turn_end':
        for (const map of [this.reasoning, this.streamed]) {
          for (const key of map.keys()) if (key.startsWith(`${chat_id}\u0000`)) map.delete(key);
        }
        this.append({ event: 'turn_end', chat_id, ...extra });
        return;
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
