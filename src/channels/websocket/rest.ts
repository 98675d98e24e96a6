/**
 * The WebUI's REST routes (token already checked by http.ts):
 *   GET    /api/sessions              the WebSocket chats, newest first
 *   GET    /api/sessions/:chat_id     one chat's history
 *   PATCH  /api/sessions/:chat_id     {"title": "…"} renames it (a title in the session's metadata)
 *   DELETE /api/sessions/:chat_id     deletes it
 *   GET    /api/status[?chat_id=]     model, provider, context use, channels, cron jobs
 *   GET    /api/info                  where the WebSocket is (`ws_path`)
 *   POST   /api/uploads               raw file body → {"id", …}, a reference for a `message` envelope
 * and, without the token (http.ts lets it through; the signed URL is the capability):
 *   GET    /api/media/:sig/:payload   a file the agent sent (media-urls.ts)
 */
import { closeSync, createReadStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { type CheckedFile, openCheckedFile, type RealPathCheck } from '../../security/checked-open.js';
import { isPathInside, realpathNearest } from '../../security/workspace.js';
import { errorMessage } from '../../util/errors.js';
import type { WebUiBackend } from './backend.js';
import { statusReport } from './backend.js';
import { CHAT_ID_PATTERN, type SessionHistory, type SessionRow, type UploadResult } from './frames.js';
import { historyEntries, sessionTitle } from './history.js';
import { sendJson } from './http.js';
import { type MediaRefs, receiveUpload, servedContentType, UploadError } from './media-refs.js';
import type { MediaSigner } from './media-urls.js';

export interface RestOptions {
  backend(): WebUiBackend | undefined;
  media: MediaRefs;
  /** Where uploads are saved. */
  uploadDir: string;
  maxUploadBytes(): number;
  /** `websocket:<chat_id>`. */
  sessionKey(chatId: string): string;
  /** The prefix of this channel's session keys (`websocket:`). */
  keyPrefix: string;
  /** The WebSocket upgrade path. */
  wsPath: string;
}

const MAX_JSON_BODY = 16 * 1024;
const renameBody = z.strictObject({ title: z.string().trim().min(1).max(120) });

export async function handleApi(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  options: RestOptions,
): Promise<void> {
  const parts = url.pathname.split('/').filter(Boolean).slice(1);
  const [resource, id, extra] = parts;
  const method = req.method ?? 'GET';
  if (extra !== undefined) return sendJson(res, 404, { error: 'not found' });

  if (resource === 'uploads' && id === undefined) {
    if (method !== 'POST') return sendJson(res, 405, { error: 'use POST' });
    return upload(req, res, options);
  }
  if (resource === 'info' && id === undefined) return sendJson(res, 200, { ws_path: options.wsPath });

  const backend = options.backend();
  if (!backend) return sendJson(res, 503, { error: 'the gateway is still starting' });

  if (resource === 'status' && id === undefined) {
    if (method !== 'GET') return sendJson(res, 405, { error: 'use GET' });
    const chatId = url.searchParams.get('chat_id');
    const session =
      chatId && CHAT_ID_PATTERN.test(chatId) ? await backend.sessions().load(options.sessionKey(chatId)) : undefined;
    return sendJson(res, 200, await statusReport(backend, session?.messages.length ? session : undefined));
  }
  if (resource !== 'sessions') return sendJson(res, 404, { error: 'not found' });

  if (id === undefined) {
    if (method !== 'GET') return sendJson(res, 405, { error: 'use GET' });
    const rows: SessionRow[] = [];
    for (const summary of await backend.sessions().list()) {
      if (!summary.key.startsWith(options.keyPrefix)) continue;
      const chatId = summary.key.slice(options.keyPrefix.length);
      if (!CHAT_ID_PATTERN.test(chatId)) continue;
      const session = await backend.sessions().load(summary.key);
      rows.push({
        chat_id: chatId,
        title: sessionTitle(session),
        updated_at: summary.updatedAt,
        message_count: summary.messageCount,
      });
    }
    return sendJson(res, 200, { sessions: rows });
  }

  if (!CHAT_ID_PATTERN.test(id)) return sendJson(res, 400, { error: 'invalid chat_id' });
  const key = options.sessionKey(id);
  if (method === 'GET') {
    const session = await backend.sessions().load(key);
    const history: SessionHistory = {
      chat_id: id,
      title: sessionTitle(session),
      entries: historyEntries(session.messages),
    };
    return sendJson(res, 200, history);
  }
  if (method !== 'PATCH' && method !== 'DELETE') return sendJson(res, 405, { error: 'use GET, PATCH or DELETE' });
  // The running turn saves its own copy of the session at the end, which would undo the change.
  if (backend.isBusy(key)) return sendJson(res, 409, { error: 'the agent is answering in this chat; try again after' });
  if (method === 'DELETE') {
    await backend.sessions().delete(key);
    return sendJson(res, 200, { deleted: id });
  }
  const parsed = renameBody.safeParse(await readJson(req).catch(() => undefined));
  if (!parsed.success) return sendJson(res, 400, { error: 'send {"title": "…"} (1–120 characters)' });
  const session = await backend.sessions().load(key);
  if (session.messages.length === 0) return sendJson(res, 404, { error: 'no such chat' });
  session.metadata.title = parsed.data.title;
  await backend.sessions().save(session);
  return sendJson(res, 200, { chat_id: id, title: parsed.data.title });
}

async function upload(req: IncomingMessage, res: ServerResponse, options: RestOptions): Promise<void> {
  try {
    const ref = await receiveUpload(req, options.uploadDir, options.maxUploadBytes());
    const result: UploadResult = { id: options.media.add(ref), name: ref.name, kind: ref.kind, size: ref.size };
    sendJson(res, 201, result);
  } catch (err) {
    if (err instanceof UploadError) {
      // The client may still be sending: answer, then stop reading.
      res.setHeader('connection', 'close');
      sendJson(res, err.status, { error: err.message });
      req.resume();
      return;
    }
    sendJson(res, 400, { error: `upload failed: ${errorMessage(err)}` });
  }
}

/** Opens the file first, then checks where it really is: a path swapped for a link since cannot redirect it. */
function insideMediaRoot(mediaRoot: string): RealPathCheck {
  const root = realpathNearest(mediaRoot);
  return (real) => (isPathInside(real, root) ? true : `it is outside the media directory ${root}`);
}

/**
 * `GET /api/media/<sig>/<payload>`: the file a signed URL names, if it is still under the media directory when
 * opened (a path swapped for a link since cannot redirect it). Images and videos inline, everything else as a
 * download; never rendered as a document of this origin, never embeddable by another site.
 */
export async function serveSignedMedia(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  signer: MediaSigner,
  mediaRoot: string,
): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') return sendJson(res, 405, { error: 'use GET' });
  const verified = signer.verify(url.pathname);
  if (!verified.ok) return sendJson(res, verified.status, { error: verified.error });
  let file: CheckedFile | undefined;
  try {
    file = openCheckedFile(verified.path, insideMediaRoot(mediaRoot));
  } catch {
    file = undefined;
  }
  if (!file) return sendJson(res, 404, { error: 'no such file' });
  const { fd, stats } = file;
  const type = servedContentType(verified.path);
  const inline = type.startsWith('image/') || type.startsWith('video/');
  res.writeHead(200, {
    'content-type': type,
    'content-length': stats.size,
    'content-disposition': `${inline ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(verified.name)}`,
    'content-security-policy': "sandbox; default-src 'none'",
    'cross-origin-resource-policy': 'same-origin',
    'x-content-type-options': 'nosniff',
    'cache-control': 'private, max-age=3600',
  });
  if (stats.size === 0 || req.method === 'HEAD') {
    closeSync(fd);
    res.end();
    return;
  }
  // Exactly the bytes announced, from the fd that was checked.
  const body = createReadStream('', { fd, start: 0, end: stats.size - 1 });
  body.on('error', () => res.destroy());
  body.pipe(res);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_JSON_BODY) throw new Error('body too large');
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}
