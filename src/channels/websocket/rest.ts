/**
 * The WebUI's REST routes (token already checked by http.ts):
 *   GET    /api/sessions              the WebSocket chats, newest first, in nanobot's row shape (sessions-api.ts)
 *   GET    /api/sessions/<key>/{webui-thread,context,automations}   nanobot's routes (sessions-api.ts)
 *   GET    /api/sessions/<key>/file-preview?path=…                 a workspace file's text (file-preview.ts)
 *   GET    /api/webui/sidebar-state   nanobot's sidebar state (written with the `sidebar.update` webui_request)
 *   GET    /api/commands              the slash commands, in nanobot's palette shape (commands-api.ts)
 *   GET    /api/status[?chat_id=]     model, provider, context use, channels, cron jobs
 *   GET    /api/info                  where the WebSocket is (`ws_path`)
 *   POST   /api/uploads               raw file body → {"id", …}, a reference for a `message` envelope
 * and, without the token (http.ts lets it through; the signed URL is the capability):
 *   GET    /api/media/:sig/:payload   a file the agent sent (media-urls.ts)
 */
import { closeSync, createReadStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type CheckedFile, openCheckedFile, type RealPathCheck } from '../../security/checked-open.js';
import { isPathInside, realpathNearest } from '../../security/workspace.js';
import { errorMessage } from '../../util/errors.js';
import { type MatchedRoute, matchRoute, WebuiApiError, webuiApiModules } from '../../webui/api.js';
import type { WebUiBackend } from './backend.js';
import { statusReport } from './backend.js';
import { commandPalette } from './commands-api.js';
import { filePreview } from './file-preview.js';
import { CHAT_ID_PATTERN, type UploadResult } from './frames.js';
import { sendJson } from './http.js';
import { type MediaRefs, receiveUpload, servedContentType, UploadError } from './media-refs.js';
import type { MediaSigner } from './media-urls.js';
import {
  listSessions,
  type SessionsApiOptions,
  sessionAutomations,
  sessionContext,
  webuiThread,
} from './sessions-api.js';

export interface RestOptions {
  backend(): WebUiBackend | undefined;
  media: MediaRefs;
  /** Where uploads are saved. */
  uploadDir: string;
  maxUploadBytes(): number;
  /** `websocket:<chat_id>`. */
  sessionKey(chatId: string): string;
  /** The WebSocket upgrade path. */
  wsPath: string;
  /** nanobot's session routes: transcripts and sidebar state. */
  sessionsApi: SessionsApiOptions;
}

/** The routes of this file (the rest are src/webui/'s modules). */
const CHAT_RESOURCES: ReadonlySet<string> = new Set(['sessions', 'uploads', 'info', 'commands', 'status']);

export async function handleApi(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  options: RestOptions,
): Promise<void> {
  const parts = url.pathname.split('/').filter(Boolean).slice(1);
  const [resource, id, extra] = parts;
  const method = req.method ?? 'GET';
  if (resource === 'sessions' && id !== undefined && extra !== undefined) {
    return sessionSubroute(req, res, url, options, id, parts.slice(2));
  }
  // The chat's own routes below never wait for the settings modules to load (the page asks for them first).
  if (!CHAT_RESOURCES.has(resource ?? '') && !(resource === 'webui' && id === 'sidebar-state')) {
    const moduleRoute = matchRoute(await webuiApiModules(), parts);
    if (moduleRoute) return answerModuleRoute(req, res, url, options, moduleRoute);
  }
  if (resource === 'webui' && id === 'sidebar-state' && extra === undefined) {
    if (method !== 'GET') return sendJson(res, 405, { error: 'WebUI mutations require an authenticated WebSocket' });
    return sendJson(res, 200, await options.sessionsApi.sidebar.read());
  }
  if (extra !== undefined) return sendJson(res, 404, { error: 'API route not found' });

  if (resource === 'uploads' && id === undefined) {
    if (method !== 'POST') return sendJson(res, 405, { error: 'use POST' });
    return upload(req, res, options);
  }
  if (resource === 'info' && id === undefined) return sendJson(res, 200, { ws_path: options.wsPath });

  const backend = options.backend();
  if (!backend) return sendJson(res, 503, { error: 'the gateway is still starting' });

  if (resource === 'commands' && id === undefined) {
    if (method !== 'GET') return sendJson(res, 405, { error: 'use GET' });
    return sendJson(res, 200, commandPalette(backend.commands?.() ?? []));
  }
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
    const answer = await listSessions(backend, options.sessionsApi);
    return sendJson(res, answer.status, answer.body);
  }

  // Per-chat reads go through nanobot's routes (/api/sessions/<key>/…); changes through webui_request.
  if (method !== 'GET') return sendJson(res, 405, { error: 'WebUI mutations require an authenticated WebSocket' });
  return sendJson(res, 404, { error: 'API route not found' });
}

/** A route of a WebUI API module (src/webui/): reads only; changes go through `webui_request`. */
async function answerModuleRoute(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  options: RestOptions,
  route: MatchedRoute,
): Promise<void> {
  if ((req.method ?? 'GET') !== 'GET') {
    return sendJson(res, 405, { error: 'WebUI mutations require an authenticated WebSocket' });
  }
  const backend = options.backend();
  if (!backend) return sendJson(res, 503, { error: 'the gateway is still starting' });
  try {
    const body = await route.handler({ backend }, { segments: route.segments, query: url.searchParams });
    return sendJson(res, 200, body);
  } catch (error) {
    if (error instanceof WebuiApiError) return sendJson(res, error.status, { error: error.message });
    return sendJson(res, 500, { error: `request failed: ${errorMessage(error)}` });
  }
}

/** `GET /api/sessions/<key>/<route>`: nanobot's read-only session routes. */
async function sessionSubroute(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  options: RestOptions,
  rawKey: string,
  rest: string[],
): Promise<void> {
  const [route, more] = rest;
  const known = route === 'webui-thread' || route === 'context' || route === 'automations' || route === 'file-preview';
  if (!known || more !== undefined) {
    if (route === 'delete') return sendJson(res, 405, { error: 'WebUI mutations require an authenticated WebSocket' });
    return sendJson(res, 404, { error: 'API route not found' });
  }
  if ((req.method ?? 'GET') !== 'GET') return sendJson(res, 405, { error: 'use GET' });
  const backend = options.backend();
  if (!backend) return sendJson(res, 503, { error: 'session manager unavailable' });
  if (route === 'file-preview') {
    const preview = filePreview(backend, options.sessionsApi, rawKey, url.searchParams);
    return sendJson(res, preview.status, preview.body);
  }
  const answer =
    route === 'webui-thread'
      ? await webuiThread(backend, options.sessionsApi, rawKey, url.searchParams)
      : route === 'context'
        ? await sessionContext(backend, options.sessionsApi, rawKey)
        : await sessionAutomations(backend, options.sessionsApi, rawKey);
  return sendJson(res, answer.status, answer.body);
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
