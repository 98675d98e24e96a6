/**
 * The iLink bot HTTP API that personal WeChat bots speak (ilinkai.weixin.qq.com): JSON over POST/GET under
 * `ilink/bot/`, a bot token as `Authorization: Bearer`, and business errors as `ret` / `errcode` in a 200 body.
 * Every response is read with a size cap and checked with zod; redirects are refused, so the token never travels to
 * a host the config did not name.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { packageVersion } from '../../util/paths.js';

/** The iLink protocol version nanobot speaks (the one upstream nanobot aligns with). */
const CHANNEL_VERSION = '2.4.6';
/** `major << 16 | minor << 8 | patch` of CHANNEL_VERSION, as the iLink-App-ClientVersion header carries it. */
const CLIENT_VERSION = String((2 << 16) | (4 << 8) | 6);

/** A bot token is stale (logged out, or replaced by a newer login): a new QR login is needed. */
export const ERR_SESSION_EXPIRED = -14;
/** The chat's context token cannot carry more messages now (expired, quota used up, or sending restricted). */
export const ERR_CONTEXT_RESTRICTED = -2;
/** A request argument was refused (e.g. a stale token in `local_token_list`). */
export const ERR_INVALID_ARGUMENT = -3;

/** JSON answers larger than this are refused (a getupdates batch is a few KB). */
export const MAX_JSON_BYTES = 4 * 1024 * 1024;

export const baseInfo = (): Record<string, string> => ({
  channel_version: CHANNEL_VERSION,
  bot_agent: `nanobot-ts/${packageVersion()}`,
});

/** A business error in a 200 answer. */
export class IlinkError extends Error {
  constructor(
    readonly endpoint: string,
    readonly code: number,
    detail: string,
  ) {
    super(`WeChat ${endpoint} failed (code ${code}): ${detail || 'no error message'}`);
    this.name = 'IlinkError';
  }
  get sessionExpired(): boolean {
    return this.code === ERR_SESSION_EXPIRED;
  }
  get contextRestricted(): boolean {
    return this.code === ERR_CONTEXT_RESTRICTED;
  }
}

/** The server could not be reached or answered with an HTTP error; `retryAfterMs` when it asked to slow down. */
export class IlinkHttpError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'IlinkHttpError';
  }
}

const envelope = z.looseObject({
  ret: z.coerce.number().optional().catch(0),
  errcode: z.coerce.number().optional().catch(0),
  errmsg: z.string().optional().catch(''),
});

/** `ret` / `errcode` of an answer, or undefined when both are 0. */
export function businessError(endpoint: string, body: unknown): IlinkError | undefined {
  const parsed = envelope.safeParse(body);
  if (!parsed.success) return undefined;
  const { ret = 0, errcode = 0, errmsg = '' } = parsed.data;
  const code = errcode || ret;
  return code ? new IlinkError(endpoint, code, errmsg.slice(0, 300)) : undefined;
}

export interface IlinkOptions {
  baseUrl: string;
  token?: () => string;
  routeTag?: string | number | undefined;
  fetch?: typeof fetch;
}

export interface CallOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  auth?: boolean;
}

export class IlinkApi {
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: IlinkOptions) {
    this.fetchImpl = options.fetch ?? fetch;
  }

  get baseUrl(): string {
    return this.options.baseUrl;
  }

  headers(auth: boolean): Record<string, string> {
    // X-WECHAT-UIN: a random uint32 in decimal, base64-encoded, new for every request (as the official plugin does).
    const uin = Buffer.from(String(randomBytes(4).readUInt32BE(0))).toString('base64');
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      AuthorizationType: 'ilink_bot_token',
      'X-WECHAT-UIN': uin,
      'iLink-App-Id': 'bot',
      'iLink-App-ClientVersion': CLIENT_VERSION,
    };
    const token = auth ? this.options.token?.() : undefined;
    if (token) headers.Authorization = `Bearer ${token}`;
    const tag = this.options.routeTag === undefined ? '' : String(this.options.routeTag).trim();
    if (tag) headers.SKRouteTag = tag;
    return headers;
  }

  /** POSTs `body` (with `base_info` unless it is a login call) and parses the answer with `schema`. */
  async post<S extends z.ZodType>(
    endpoint: string,
    body: Record<string, unknown>,
    schema: S,
    call: CallOptions & { baseInfo?: boolean },
  ): Promise<z.output<S>> {
    const payload = call.baseInfo === false ? body : { ...body, base_info: baseInfo() };
    return this.request(endpoint, { method: 'POST', body: JSON.stringify(payload) }, schema, call);
  }

  async get<S extends z.ZodType>(
    endpoint: string,
    query: Record<string, string>,
    schema: S,
    call: CallOptions,
    baseUrl = this.options.baseUrl,
  ): Promise<z.output<S>> {
    const params = new URLSearchParams(query).toString();
    return this.request(`${endpoint}${params ? `?${params}` : ''}`, { method: 'GET' }, schema, call, baseUrl);
  }

  private async request<S extends z.ZodType>(
    path: string,
    init: { method: string; body?: string },
    schema: S,
    call: CallOptions,
    baseUrl = this.options.baseUrl,
  ): Promise<z.output<S>> {
    const endpoint = path.split('?')[0] ?? path;
    const timeout = AbortSignal.timeout(call.timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    let response: Response;
    try {
      response = await this.fetchImpl(`${baseUrl.replace(/\/+$/, '')}/${path}`, {
        ...init,
        headers: this.headers(call.auth !== false),
        redirect: 'error',
        signal,
      });
    } catch (err) {
      if (call.signal?.aborted) throw err;
      const why = timeout.aborted ? `no answer within ${Math.round(call.timeoutMs / 1000)} s` : causeOf(err);
      throw new IlinkHttpError(`WeChat ${endpoint}: ${why}`);
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      const retryAfter = retryAfterMs(response);
      throw new IlinkHttpError(`WeChat ${endpoint}: HTTP ${response.status}`, response.status, retryAfter);
    }
    const text = await readCapped(response, MAX_JSON_BYTES, endpoint);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new IlinkHttpError(`WeChat ${endpoint}: the server did not answer with JSON`);
    }
    const failure = businessError(endpoint, json);
    if (failure) throw failure;
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw new IlinkHttpError(`WeChat ${endpoint}: unexpected answer (${parsed.error.message})`);
    return parsed.data;
  }
}

/** The body as text, refusing more than `max` bytes (a hostile or broken server cannot fill the memory). */
export async function readCapped(response: Response, max: number, what: string): Promise<string> {
  return Buffer.from(await readBytesCapped(response, max, what)).toString('utf8');
}

export async function readBytesCapped(response: Response, max: number, what: string): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > max) {
    await response.body?.cancel().catch(() => undefined);
    throw new IlinkHttpError(`WeChat ${what}: the answer is too large (${declared} bytes)`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body?.getReader();
  if (!reader) return new Uint8Array();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      throw new IlinkHttpError(`WeChat ${what}: the answer is too large (over ${max} bytes)`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

function retryAfterMs(response: Response): number | undefined {
  if (response.status !== 429 && response.status !== 503) return undefined;
  const header = response.headers.get('retry-after');
  const seconds = header === null || header.trim() === '' ? Number.NaN : Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 3600) * 1000 : 30_000;
}

function causeOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } } | null)?.cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}
