/**
 * The OpenAI-compatible HTTP API (`nanobot serve`): `GET /health`, `GET /v1/models`, `POST /v1/chat/completions`.
 * Any OpenAI client can talk to the agent. Secure by default: loopback unless told otherwise, and then only with an
 * API key; bodies are size-limited; CORS is off unless origins are configured. Turns of one session run one at a time.
 *
 * Web pages cannot drive it: a request from a browser page whose `Origin` is not in `corsOrigins` is refused, a
 * server bound to loopback answers only a loopback `Host` (DNS rebinding), and a POST body must be
 * `application/json` (a page can send text/plain or a form cross-site without asking; JSON needs a CORS preflight).
 * Wrong API keys are limited per client address (429 with Retry-After).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentLoop, TurnOutput } from '../agent/loop.js';
import { AuthLimiter } from '../security/auth-limiter.js';
import { hostHeaderAllowed, isLoopbackHost, originAllowed } from '../security/hosts.js';
import { secretMatches } from '../security/secrets.js';
import type { SessionStore } from '../session/types.js';
import { UserError } from '../util/errors.js';
import { type Logger, silentLogger } from '../util/log.js';
import {
  type ApiTurn,
  ChatCompletionRequest,
  type CompletionIds,
  completionChunk,
  completionIds,
  completionResponse,
  errorBody,
  toApiTurn,
} from './completions.js';
import { ImageInputError, saveDataUrlImages } from './images.js';

export interface ApiServerOptions {
  loop: AgentLoop;
  sessions: SessionStore;
  /** The model id reported by /v1/models and accepted in requests. */
  model: string;
  host: string;
  port: number;
  apiKey?: string | null;
  /** Seconds a turn may take before the request gets 504. */
  timeoutS: number;
  /** Browser origins allowed to call the API (`*` for any); empty = no CORS headers. */
  corsOrigins?: string[];
  maxBodyBytes?: number;
  /** Where images sent as data: URLs are saved (`<dataDir>/media/api`). */
  mediaDir: string;
  log?: Logger;
  /** Wrong-key limiter (per client address); default: 10 failures a minute. */
  authLimiter?: AuthLimiter;
}

export interface ApiServer {
  url: string;
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY = 20 * 1024 * 1024;
const MAX_IMAGE_BYTES = 10 * 1024 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = 'invalid_request_error',
    readonly code: string | null = null,
    readonly retryAfterS = 0,
  ) {
    super(message);
  }
}

export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  if (!isLoopbackHost(options.host) && !options.apiKey) {
    throw new UserError(
      `refusing to serve the API on ${options.host} without an API key: anyone who can reach it could run your agent`,
      'Set api.apiKey in ~/.nanobot/config.json (clients send it as "Authorization: Bearer <key>"), or bind 127.0.0.1.',
    );
  }
  const log = options.log ?? silentLogger;
  const limiter = options.authLimiter ?? new AuthLimiter();
  const corsOrigins = options.corsOrigins ?? [];
  const chains = new Map<string, Promise<unknown>>();
  /** One turn at a time per session: an API call always gets its own turn, never joins a running one. */
  const serialised = <T>(key: string, task: () => Promise<T>): Promise<T> => {
    const run = (chains.get(key) ?? Promise.resolve()).catch(() => undefined).then(task);
    chains.set(key, run);
    // Both ways: a plain .finally() would re-raise a failed turn where nobody handles it (the request does).
    const forget = () => {
      if (chains.get(key) === run) chains.delete(key);
    };
    run.then(forget, forget);
    return run;
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const http = err instanceof HttpError ? err : undefined;
      if (!http) log.error(`api: ${req.method} ${req.url}: ${(err as Error).stack ?? String(err)}`);
      if (res.headersSent) {
        res.end();
        return;
      }
      const status = http?.status ?? 500;
      if (http?.retryAfterS) res.setHeader('retry-after', String(http.retryAfterS));
      sendJson(res, status, errorBody(http?.message ?? 'internal error', http?.type ?? 'server_error', http?.code));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '') || '/';
    refuseForeignCallers(req, options.host, corsOrigins);
    if (applyCors(req, res, corsOrigins)) return;
    if (path === '/health' && req.method === 'GET') {
      sendJson(res, 200, { status: 'ok', model: options.model });
      return;
    }
    authorize(req, options.apiKey, limiter);
    if (path === '/v1/models' && req.method === 'GET') {
      sendJson(res, 200, {
        object: 'list',
        data: [{ id: options.model, object: 'model', created: 0, owned_by: 'nanobot' }],
      });
      return;
    }
    if (path === '/v1/chat/completions') {
      if (req.method !== 'POST') throw new HttpError(405, 'use POST for /v1/chat/completions');
      await chatCompletions(req, res);
      return;
    }
    throw new HttpError(404, `no route ${req.method} ${path}`, 'invalid_request_error', 'not_found');
  }

  async function chatCompletions(req: IncomingMessage, res: ServerResponse): Promise<void> {
    requireJson(req);
    const body = parseRequest(await readBody(req, options.maxBodyBytes ?? DEFAULT_MAX_BODY));
    if (body.model !== undefined && body.model !== options.model) {
      throw new HttpError(400, `model "${body.model}" is not served here; use "${options.model}" or leave it out`);
    }
    const turn = toTurn(body);
    const media = await saveDataUrlImages(turn.images, options.mediaDir, MAX_IMAGE_BYTES).catch((err: unknown) => {
      if (err instanceof ImageInputError) throw new HttpError(err.tooLarge ? 413 : 400, err.message);
      throw err;
    });
    const ids = completionIds(options.model);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error('timeout')), options.timeoutS * 1000);
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(new Error('client went away'));
    });
    try {
      if (body.stream) await streamTurn(turn, media, ids, res, abort.signal);
      else {
        const output = await runTurn(turn, media, abort.signal);
        if (abort.signal.aborted && abort.signal.reason?.message === 'timeout') {
          throw new HttpError(504, `the agent took longer than ${options.timeoutS} s`, 'timeout', 'timeout');
        }
        const failure = modelFailure(output);
        if (failure) throw new HttpError(failure.status, failure.message, failure.type, failure.code);
        sendJson(res, 200, completionResponse(ids, output.content, output.usage, finishOf(output)));
      }
    } finally {
      clearTimeout(timer);
    }
  }

  function toTurn(body: ChatCompletionRequest): ApiTurn {
    const turn = toApiTurn(body);
    if ('error' in turn) throw new HttpError(400, turn.error);
    return turn;
  }

  async function runTurn(
    turn: ApiTurn,
    media: string[],
    signal: AbortSignal,
    onEvent?: Parameters<AgentLoop['processMessage']>[1],
  ) {
    return serialised(turn.sessionKey, async () => {
      if (turn.ephemeral) await seed(turn);
      try {
        return await options.loop.processMessage(
          {
            channel: 'api',
            chatId: turn.sessionKey.slice('api:'.length),
            content: turn.text,
            sessionKey: turn.sessionKey,
            ...(media.length > 0 ? { media } : {}),
          },
          { signal, ...onEvent },
        );
      } finally {
        if (turn.ephemeral) await options.sessions.delete(turn.sessionKey);
      }
    });
  }

  async function seed(turn: ApiTurn): Promise<void> {
    const session = await options.sessions.load(turn.sessionKey);
    session.messages.push(...turn.context);
    await options.sessions.save(session);
  }

  async function streamTurn(
    turn: ApiTurn,
    media: string[],
    ids: CompletionIds,
    res: ServerResponse,
    signal: AbortSignal,
  ) {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    const write = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
    write(completionChunk(ids, { role: 'assistant', content: '' }));
    let streamed = '';
    const output = await runTurn(turn, media, signal, {
      onEvent: (event) => {
        if (event.type === 'text-delta') {
          streamed += event.text;
          write(completionChunk(ids, { content: event.text }));
        } else if (event.type === 'reasoning-delta') write(completionChunk(ids, { reasoning_content: event.text }));
      },
    });
    // Commands produce an answer without deltas; a streamed answer may also end differently than it began. A failed
    // one's content is only the text that streamed before the failure.
    const failure = modelFailure(output);
    if (!failure && output.content && !streamed.endsWith(output.content)) {
      write(completionChunk(ids, { content: streamed ? `\n\n${output.content}` : output.content }));
    }
    if (signal.aborted && signal.reason?.message === 'timeout') {
      write(errorBody(`the agent took longer than ${options.timeoutS} s`, 'timeout', 'timeout'));
    } else if (failure) write(errorBody(failure.message, failure.type, failure.code));
    write(completionChunk(ids, {}, finishOf(output), output.usage));
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new UserError(
              `port ${options.port} on ${options.host} is in use`,
              'Stop the other process or pick a port: nanobot serve -p <port>',
            )
          : err,
      );
    });
    server.listen(options.port, options.host, resolve);
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A turn that ended on a model failure (a stalled stream, a deadline, an upstream error), as an API error. */
function modelFailure(output: TurnOutput): { status: number; message: string; type: string; code: string } | undefined {
  if (output.stopReason !== 'error' || !output.error) return undefined;
  const { kind, message } = output.error;
  return kind === 'timeout'
    ? { status: 504, message, type: 'timeout', code: kind }
    : { status: 502, message, type: 'upstream_error', code: kind };
}

function finishOf(output: TurnOutput): string {
  return output.stopReason === 'max_iterations' ? 'length' : 'stop';
}

function parseRequest(raw: string): ChatCompletionRequest {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new HttpError(400, 'the request body is not valid JSON');
  }
  const parsed = ChatCompletionRequest.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
    throw new HttpError(400, `${where}${issue?.message ?? 'invalid request'}`);
  }
  return parsed.data;
}

/** A browser page of another site (by `Origin`) or a rebound DNS name (by `Host`) gets nothing, not even /health. */
function refuseForeignCallers(req: IncomingMessage, bindHost: string, corsOrigins: readonly string[]): void {
  const alsoAllowed = corsOrigins.flatMap((origin) => hostOf(origin));
  if (!hostHeaderAllowed(req.headers.host, { bindHost, alsoAllowed })) {
    throw new HttpError(
      421,
      `the Host header ${quote(req.headers.host)} does not name this server: it listens on ${bindHost}, so requests ` +
        'must be sent to 127.0.0.1, localhost or [::1] (behind a reverse proxy, add its origin to api.corsOrigins)',
      'invalid_request_error',
      'host_not_allowed',
    );
  }
  if (!originAllowed(req.headers.origin, { allowed: corsOrigins })) {
    throw new HttpError(
      403,
      `requests from the web page ${quote(req.headers.origin)} are refused: add that origin to api.corsOrigins in ` +
        '~/.nanobot/config.json to allow it (clients that are not browsers send no Origin header)',
      'invalid_request_error',
      'origin_not_allowed',
    );
  }
}

/** The body must be JSON: what a page can POST cross-site without a preflight (text/plain, forms) is refused. */
function requireJson(req: IncomingMessage): void {
  const header = req.headers['content-type'] ?? '';
  const [type = '', ...params] = header.split(';').map((part) => part.trim().toLowerCase());
  const charset = params
    .find((param) => param.startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/"/g, '');
  if (type === 'application/json' && (charset === undefined || charset === 'utf-8' || charset === 'utf8')) return;
  throw new HttpError(
    415,
    `the request body must be JSON: send "Content-Type: application/json" (got ${quote(req.headers['content-type'])})`,
    'invalid_request_error',
    'unsupported_media_type',
  );
}

function authorize(req: IncomingMessage, apiKey: string | null | undefined, limiter: AuthLimiter): void {
  if (!apiKey) return;
  const address = req.socket.remoteAddress;
  const wait = limiter.retryAfterS(address);
  if (wait > 0) {
    throw new HttpError(
      429,
      `too many requests with a wrong API key from this address; retry in ${wait} s with the right api.apiKey`,
      'rate_limit_error',
      'too_many_auth_failures',
      wait,
    );
  }
  const match = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
  if (!secretMatches(apiKey, match?.[1]?.trim())) {
    limiter.recordFailure(address);
    throw new HttpError(401, 'missing or wrong API key: send "Authorization: Bearer <api.apiKey>"', 'invalid_api_key');
  }
}

/** `https://proxy.example` → [`proxy.example`]; nothing for `*` or a malformed entry. */
function hostOf(origin: string): string[] {
  try {
    return origin === '*' ? [] : [new URL(origin).host];
  } catch {
    return [];
  }
}

/** A header value for an error message: quoted, cut short (it comes from the client). */
function quote(value: string | undefined): string {
  if (value === undefined) return '(none)';
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);
}

/** Adds CORS headers for allowed origins; answers preflight requests (returns true when it did). */
function applyCors(req: IncomingMessage, res: ServerResponse, allowed: readonly string[]): boolean {
  const origin = req.headers.origin;
  const ok = origin !== undefined && originAllowed(origin, { allowed });
  if (ok) {
    res.setHeader('access-control-allow-origin', allowed.includes('*') ? '*' : origin);
    res.setHeader('vary', 'Origin');
  }
  if (req.method !== 'OPTIONS') return false;
  if (ok) {
    res.setHeader('access-control-allow-methods', 'GET, POST, OPTIONS');
    res.setHeader('access-control-allow-headers', 'authorization, content-type');
    res.setHeader('access-control-max-age', '600');
  }
  res.writeHead(ok ? 204 : 403).end();
  return true;
}

async function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes)
    throw new HttpError(413, `the request body is over ${maxBytes} bytes`, 'invalid_request_error');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new HttpError(413, `the request body is over ${maxBytes} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
