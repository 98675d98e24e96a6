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
import type { AgentLoop } from '../agent/loop.js';
import { AuthLimiter } from '../security/auth-limiter.js';
import { isLoopbackHost } from '../security/hosts.js';
import type { SessionStore } from '../session/types.js';
import { UserError } from '../util/errors.js';
import { type Logger, silentLogger } from '../util/log.js';
import { ChatCompletionRequest, completionIds, completionResponse, toApiTurn } from './completions.js';
import { applyCors, authorize, refuseForeignCallers, requireJson } from './gate.js';
import { closeServer, HttpError, listen, readBody, sendFailure, sendJson } from './http.js';
import { ImageInputError, saveDataUrlImages } from './images.js';
import { ApiTurnRunner, finishOf, modelFailure, streamTurn } from './turns.js';

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

export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  refuseOpenBind(options.host, options.apiKey);
  const log = options.log ?? silentLogger;
  const route = apiRoutes(options, new ApiTurnRunner(options.loop, options.sessions));
  const server = createServer((req, res) => {
    route(req, res).catch((err: unknown) => sendFailure(req, res, err, log));
  });
  const url = await listen(server, options.host, options.port);
  return { url, close: () => closeServer(server) };
}

/** Off loopback, an API key is required: anyone who can reach the port could otherwise run the agent. */
export function refuseOpenBind(host: string, apiKey: string | null | undefined): void {
  if (isLoopbackHost(host) || apiKey) return;
  throw new UserError(
    `refusing to serve the API on ${host} without an API key: anyone who can reach it could run your agent`,
    'Set api.apiKey in ~/.nanobot/config.json (clients send it as "Authorization: Bearer <key>"), or bind 127.0.0.1.',
  );
}

type Route = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The request router: the gate first (Host, Origin, CORS), /health open, the API key, then the routes. */
function apiRoutes(options: ApiServerOptions, turns: ApiTurnRunner): Route {
  const limiter = options.authLimiter ?? new AuthLimiter();
  const corsOrigins = options.corsOrigins ?? [];
  const completions = chatCompletions(options, turns);
  return async (req, res) => {
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
      await completions(req, res);
      return;
    }
    throw new HttpError(404, `no route ${req.method} ${path}`, 'invalid_request_error', 'not_found');
  };
}

/** POST /v1/chat/completions: parse and check the request, save its images, run the turn under the deadline. */
function chatCompletions(options: ApiServerOptions, turns: ApiTurnRunner): Route {
  return async (req, res) => {
    requireJson(req);
    const body = parseRequest(await readBody(req, options.maxBodyBytes ?? DEFAULT_MAX_BODY));
    if (body.model !== undefined && body.model !== options.model) {
      throw new HttpError(400, `model "${body.model}" is not served here; use "${options.model}" or leave it out`);
    }
    const turn = toApiTurn(body);
    if ('error' in turn) throw new HttpError(400, turn.error);
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
      if (body.stream) {
        await streamTurn(res, ids, abort.signal, options.timeoutS, (events) =>
          turns.run(turn, media, abort.signal, events),
        );
        return;
      }
      const output = await turns.run(turn, media, abort.signal);
      if (abort.signal.aborted && abort.signal.reason?.message === 'timeout') {
        throw new HttpError(504, `the agent took longer than ${options.timeoutS} s`, 'timeout', 'timeout');
      }
      const failure = modelFailure(output);
      if (failure) throw new HttpError(failure.status, failure.message, failure.type, failure.code);
      sendJson(res, 200, completionResponse(ids, output.content, output.usage, finishOf(output)));
    } finally {
      clearTimeout(timer);
    }
  };
}

/** The body as a ChatCompletionRequest, or a 400 naming the first field that is wrong. */
export function parseRequest(raw: string): ChatCompletionRequest {
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
