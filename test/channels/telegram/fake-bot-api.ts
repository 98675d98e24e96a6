/**
 * A loopback fake of the Telegram Bot API, enough for the real grammy: `POST /bot<token>/<method>` (JSON or
 * multipart), `GET /file/bot<token>/<path>`, long-polled getUpdates that answer as soon as an update is queued.
 * It keeps each chat's messages as a user would see them (edits applied), rejects invalid HTML and over-long texts
 * like Telegram does, and can fail on purpose: `drop()` cuts every connection until `restore()`, `failNext()`
 * answers one method with an error (409 Conflict, …).
 *
 *   const api = await startFakeBotApi();
 *   api.userSays({ chatId: 7, text: 'hello' });
 *   // channels.telegram = { token: api.token, apiBase: api.url, … }
 *   await api.waitFor(() => api.messagesIn(7).length > 0);
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { assertTelegramHtml, visibleText } from './telegram-html.js';

export interface BotMessage {
  messageId: number;
  /** As sent (HTML when parse_mode was HTML). */
  text: string;
  parseMode?: string;
  edits: number;
  replyMarkup?: unknown;
  replyTo?: number;
  threadId?: number;
}

export interface ApiCall {
  method: string;
  params: Record<string, unknown>;
  /** Uploaded files: field name → { name, size }. */
  files: Record<string, { name: string; size: number }>;
}

export interface UserMessageInput {
  chatId: number;
  text?: string;
  caption?: string;
  messageId?: number;
  from?: { id: number; username?: string; first_name?: string };
  chatType?: 'private' | 'group' | 'supergroup';
  entities?: { type: string; offset: number; length: number }[];
  replyToBot?: boolean;
  photo?: { content: Buffer };
  document?: { content: Buffer; name: string; mime: string };
  /** A voice note (Telegram's are OGG/Opus). */
  voice?: { content: Buffer; mime?: string; duration?: number };
}

export interface FakeError {
  status: number;
  description: string;
  retryAfter?: number;
}

export const BOT = { id: 4242, username: 'nano_test_bot', first_name: 'Nano' };

export async function startFakeBotApi(token = '4242:TEST-TOKEN') {
  const updates: { update_id: number; [key: string]: unknown }[] = [];
  const waiters = new Set<() => void>();
  const chats = new Map<string, BotMessage[]>();
  const files = new Map<string, Buffer>();
  const calls: ApiCall[] = [];
  const failures = new Map<string, FakeError[]>();
  const sockets = new Set<Socket>();
  const held = new Set<http.ServerResponse>();
  let nextUpdateId = 1;
  let nextMessageId = 1000;
  let down = false;
  let stalled = false;
  let holdingSends = false;

  const wake = () => {
    for (const waiter of [...waiters]) waiter();
  };

  const server = http.createServer((req, res) => {
    if (down) {
      req.socket.destroy();
      return;
    }
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { ok: false, error_code: 500, description: String(err) });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const file = new RegExp(`^/file/bot${escapeRegExp(token)}/(.+)$`).exec(url.pathname);
    if (file?.[1]) {
      const content = files.get(file[1]);
      if (!content) return send(res, 404, { ok: false });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': content.length });
      res.end(content);
      return;
    }
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(url.pathname);
    if (!match || match[1] !== token)
      return send(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    const method = match[2] ?? '';
    const { params, uploads } = await readParams(req);
    calls.push({ method, params, files: uploads });
    const failure = failures.get(method)?.shift();
    if (failure) {
      return send(res, failure.status, {
        ok: false,
        error_code: failure.status,
        description: failure.description,
        ...(failure.retryAfter ? { parameters: { retry_after: failure.retryAfter } } : {}),
      });
    }
    const ok = (result: unknown) => send(res, 200, { ok: true, result });
    const bad = (description: string) => send(res, 400, { ok: false, error_code: 400, description });
    switch (method) {
      case 'getMe':
        return ok({ ...BOT, is_bot: true });
      case 'getUpdates':
        return getUpdates(params, res);
      case 'sendMessage':
      case 'editMessageText': {
        if (holdingSends) {
          held.add(res); // never answered, never shown: the platform did not take it
          return;
        }
        const text = String(params.text ?? '');
        if (params.parse_mode === 'HTML') {
          try {
            assertTelegramHtml(text);
          } catch (err) {
            return bad(`Bad Request: ${(err as Error).message}`);
          }
        }
        const shown = params.parse_mode === 'HTML' ? visibleText(text) : text;
        if (shown.length > 4096) return bad('Bad Request: message is too long');
        if (!shown.trim()) return bad('Bad Request: message text is empty');
        const chat = chatOf(String(params.chat_id));
        if (method === 'editMessageText') {
          const existing = chat.find((m) => m.messageId === Number(params.message_id));
          if (!existing) return bad('Bad Request: message to edit not found');
          if (existing.text === text) return bad('Bad Request: message is not modified');
          existing.text = text;
          existing.edits += 1;
          existing.parseMode = params.parse_mode as string | undefined;
          return ok({ message_id: existing.messageId, date: 0, chat: { id: Number(params.chat_id) }, text });
        }
        const message: BotMessage = {
          messageId: nextMessageId++,
          text,
          edits: 0,
          ...(params.parse_mode ? { parseMode: String(params.parse_mode) } : {}),
          ...(params.reply_markup ? { replyMarkup: params.reply_markup } : {}),
          ...(params.message_thread_id ? { threadId: Number(params.message_thread_id) } : {}),
          ...(isRecord(params.reply_parameters) ? { replyTo: Number(params.reply_parameters.message_id) } : {}),
        };
        chat.push(message);
        return ok({
          message_id: message.messageId,
          date: 0,
          chat: { id: Number(params.chat_id), type: 'private' },
          text,
        });
      }
      case 'sendPhoto':
      case 'sendDocument':
      case 'sendAudio':
      case 'sendVideo':
      case 'sendVoice':
        return ok({ message_id: nextMessageId++, date: 0, chat: { id: Number(params.chat_id), type: 'private' } });
      case 'getFile': {
        const id = String(params.file_id);
        if (!files.has(`files/${id}`)) return bad('Bad Request: invalid file_id');
        return ok({
          file_id: id,
          file_unique_id: id,
          file_size: files.get(`files/${id}`)?.length,
          file_path: `files/${id}`,
        });
      }
      default:
        // deleteWebhook, setWebhook, setMyCommands, sendChatAction, answerCallbackQuery, …
        return ok(true);
    }
  }

  function getUpdates(params: Record<string, unknown>, res: http.ServerResponse): void {
    const offset = Number(params.offset ?? 0);
    // Confirmed updates are forgotten, as on Telegram.
    while (updates.length > 0 && (updates[0]?.update_id ?? 0) < offset) updates.shift();
    let timer: NodeJS.Timeout | undefined;
    const answer = () => {
      waiters.delete(answer);
      held.delete(res);
      clearTimeout(timer);
      if (!res.writableEnded && !res.destroyed) send(res, 200, { ok: true, result: updates.slice(0, 100) });
    };
    if (stalled) {
      held.add(res);
      return;
    }
    if (updates.length > 0) {
      answer();
      return;
    }
    // Long poll: answer when an update arrives, or after a short wait (the real server waits `timeout` seconds).
    timer = setTimeout(answer, Math.min(Number(params.timeout ?? 0) * 1000, 300));
    waiters.add(answer);
    held.add(res);
  }

  function chatOf(chatId: string): BotMessage[] {
    let chat = chats.get(chatId);
    if (!chat) {
      chat = [];
      chats.set(chatId, chat);
    }
    return chat;
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    token,
    calls,
    /** Queues a message from a user, as Telegram would deliver it; returns the message id. */
    userSays(input: UserMessageInput): number {
      const messageId = input.messageId ?? nextMessageId++;
      const from = { is_bot: false, first_name: 'User', ...(input.from ?? { id: input.chatId }) };
      const chatType = input.chatType ?? 'private';
      const message: Record<string, unknown> = {
        message_id: messageId,
        date: Math.floor(Date.now() / 1000),
        chat: { id: input.chatId, type: chatType, ...(chatType === 'private' ? {} : { title: 'Group' }) },
        from,
        ...(input.text !== undefined ? { text: input.text } : {}),
        ...(input.caption !== undefined ? { caption: input.caption } : {}),
        ...(input.entities ? { entities: input.entities } : {}),
        ...(input.replyToBot
          ? {
              reply_to_message: {
                message_id: 1,
                date: 0,
                chat: { id: input.chatId, type: chatType },
                from: { ...BOT, is_bot: true },
                text: 'earlier answer',
              },
            }
          : {}),
      };
      if (input.photo) {
        const id = `photo-${messageId}`;
        files.set(`files/${id}`, input.photo.content);
        message.photo = [
          { file_id: id, file_unique_id: id, width: 10, height: 10, file_size: input.photo.content.length },
        ];
      }
      if (input.document) {
        const id = `doc-${messageId}`;
        files.set(`files/${id}`, input.document.content);
        message.document = {
          file_id: id,
          file_unique_id: id,
          file_name: input.document.name,
          mime_type: input.document.mime,
          file_size: input.document.content.length,
        };
      }
      if (input.voice) {
        const id = `voice-${messageId}`;
        files.set(`files/${id}`, input.voice.content);
        message.voice = {
          file_id: id,
          file_unique_id: id,
          duration: input.voice.duration ?? 1,
          mime_type: input.voice.mime ?? 'audio/ogg',
          file_size: input.voice.content.length,
        };
      }
      updates.push({ update_id: nextUpdateId++, message });
      wake();
      return messageId;
    },
    /** Queues a raw update (e.g. the same message twice, or a callback query). */
    pushUpdate(update: Record<string, unknown>): void {
      updates.push({ ...update, update_id: nextUpdateId++ });
      wake();
    },
    /** What the bot sent to a chat, edits applied. */
    messagesIn(chatId: number | string): BotMessage[] {
      return chats.get(String(chatId)) ?? [];
    },
    callsOf(method: string): ApiCall[] {
      return calls.filter((call) => call.method === method);
    },
    /** The next calls of `method` fail with these errors, in order. */
    failNext(method: string, ...errors: FakeError[]): void {
      failures.set(method, [...(failures.get(method) ?? []), ...errors]);
    },
    /** Cuts every connection (held long polls too) and refuses new ones until `restore`. */
    drop(): void {
      down = true;
      for (const res of held) res.destroy();
      held.clear();
      waiters.clear();
      for (const socket of sockets) socket.destroy();
    },
    restore(): void {
      down = false;
    },
    /** sendMessage and editMessageText get no answer and change nothing while on (a platform that hangs). */
    holdSends(on: boolean): void {
      holdingSends = on;
    },
    /** getUpdates calls get no answer at all (a hung connection) while on. */
    stallUpdates(on: boolean): void {
      stalled = on;
    },
    async close(): Promise<void> {
      down = true;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeBotApi = Awaited<ReturnType<typeof startFakeBotApi>>;

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** JSON bodies, and multipart bodies (file uploads). */
async function readParams(
  req: http.IncomingMessage,
): Promise<{ params: Record<string, unknown>; uploads: Record<string, { name: string; size: number }> }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const type = req.headers['content-type'] ?? '';
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(type);
  if (type.startsWith('multipart/form-data') && boundary) return parseMultipart(body, boundary[1] ?? boundary[2] ?? '');
  if (body.length === 0) return { params: {}, uploads: {} };
  return { params: JSON.parse(body.toString('utf8')) as Record<string, unknown>, uploads: {} };
}

function parseValue(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** A small multipart/form-data reader: fields become params, file parts are recorded by name and size. */
function parseMultipart(
  body: Buffer,
  boundary: string,
): { params: Record<string, unknown>; uploads: Record<string, { name: string; size: number }> } {
  const params: Record<string, unknown> = {};
  const uploads: Record<string, { name: string; size: number }> = {};
  const delimiter = Buffer.from(`--${boundary}`);
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const next = body.indexOf(delimiter, at + delimiter.length);
    if (next === -1) break;
    const part = body.subarray(at + delimiter.length + 2, next - 2);
    const split = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, split).toString('utf8');
    const content = part.subarray(split + 4);
    const name = /name="([^"]*)"/.exec(headers)?.[1] ?? '';
    const file = /filename=(?:"([^"]*)"|([^;\r\n]+))/.exec(headers);
    const filename = file ? (file[1] ?? file[2]) : undefined;
    if (filename !== undefined) uploads[name] = { name: filename, size: content.length };
    else params[name] = parseValue(content.toString('utf8'));
    at = next;
  }
  return { params, uploads };
}
