/**
 * The QQ Bot API v2 over HTTPS: the app access token (getAppAccessToken with appId + clientSecret, cached and
 * renewed a minute before `expires_in`), the gateway address, and passive replies. Every call has a timeout, and
 * errors name the endpoint and QQ's own code and message, never the secret or the token.
 */
import { z } from 'zod';
import { UserError } from '../../util/errors.js';
import { platformRequest, readPlatformJson } from '../platform-http.js';

/** Renew this long before QQ says the token expires (clocks differ; a request may be in flight). */
const RENEW_BEFORE_MS = 60_000;
const TIMEOUT_MS = 15_000;

const tokenSchema = z.looseObject({
  access_token: z.string().min(1),
  // QQ sends the lifetime as a string ("7200"); a number is taken too.
  expires_in: z.union([z.string(), z.number()]).transform(Number).pipe(z.number().positive()),
});
const errorSchema = z.looseObject({ code: z.number().optional(), message: z.string().optional() });
const gatewaySchema = z.looseObject({ url: z.string().min(1) });
const sentSchema = z.looseObject({ id: z.string().optional() });

export interface QqApiOptions {
  appId: string;
  secret: string;
  /** https://api.sgroup.qq.com (or the sandbox), or a test's loopback fake. */
  apiBase: string;
  tokenUrl: string;
  now?: () => number;
}

/** QQ answered a call with an error: its code says why (e.g. 11244 the token, 40054005 a repeated msg_seq). */
export class QqApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code?: number,
  ) {
    super(message);
    this.name = 'QqApiError';
  }
}

export interface MessageBody {
  msg_type: 0 | 2 | 7;
  content?: string;
  markdown?: { content: string };
  media?: { file_info: string };
  msg_id?: string;
  msg_seq?: number;
}

export class QqApi {
  private token?: { value: string; expiresAt: number };
  private pending?: Promise<string>;
  private readonly now: () => number;

  constructor(private readonly options: QqApiOptions) {
    this.now = options.now ?? Date.now;
  }

  /** The current token, fetched once when several callers ask at the same time. */
  async accessToken(): Promise<string> {
    if (this.token && this.now() < this.token.expiresAt - RENEW_BEFORE_MS) return this.token.value;
    this.pending ??= this.fetchToken().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  async gatewayUrl(): Promise<string> {
    return gatewaySchema.parse(await this.call('GET', '/gateway')).url;
  }

  /** A message to a user (`c2c`, by openid) or a group (by group_openid); resolves to QQ's id for it. */
  async send(kind: 'c2c' | 'group', openid: string, body: MessageBody): Promise<string> {
    const path = kind === 'group' ? `/v2/groups/${enc(openid)}/messages` : `/v2/users/${enc(openid)}/messages`;
    return sentSchema.parse(await this.call('POST', path, body)).id ?? '';
  }

  /** Uploads a file for a rich-media message; QQ answers the `file_info` to send with msg_type 7. */
  async upload(kind: 'c2c' | 'group', openid: string, fileType: 1 | 2 | 3 | 4, data: Buffer, name?: string) {
    const path = kind === 'group' ? `/v2/groups/${enc(openid)}/files` : `/v2/users/${enc(openid)}/files`;
    const body = {
      file_type: fileType,
      file_data: data.toString('base64'),
      srv_send_msg: false,
      ...(name ? { file_name: name } : {}),
    };
    return z.looseObject({ file_info: z.string().min(1) }).parse(await this.call('POST', path, body));
  }

  private async fetchToken(): Promise<string> {
    const started = this.now();
    const response = await request(this.options.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ appId: this.options.appId, clientSecret: this.options.secret }),
    });
    const body = await readJson(response, 'getAppAccessToken');
    const parsed = tokenSchema.safeParse(body);
    if (!response.ok || !parsed.success) {
      const error = errorSchema.safeParse(body);
      const detail = error.success && error.data.message ? `: ${error.data.message}` : '';
      if (response.status >= 500 || response.status === 429) {
        throw new QqApiError(`QQ's token service failed (HTTP ${response.status}${detail})`, response.status);
      }
      // A setup mistake, not a network one: not retried until the config changes.
      throw new UserError(
        `QQ refused channels.qq.appId ${this.options.appId} with channels.qq.secret (getAppAccessToken, HTTP ${response.status}${detail}).`,
        'Copy the AppID and AppSecret again from https://q.qq.com/ → 开发 → 开发设置 (a new AppSecret replaces the old one).',
      );
    }
    this.token = { value: parsed.data.access_token, expiresAt: started + parsed.data.expires_in * 1000 };
    return parsed.data.access_token;
  }

  private async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const token = await this.accessToken();
    const response = await request(`${this.options.apiBase.replace(/\/+$/, '')}${path}`, {
      method,
      headers: { authorization: `QQBot ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const answer = await readJson(response, `${method} ${path}`);
    if (!response.ok) {
      const error = errorSchema.safeParse(answer);
      const code = error.success ? error.data.code : undefined;
      // A token QQ no longer takes: fetch a fresh one next time.
      if (response.status === 401) this.token = undefined;
      const detail = error.success && error.data.message ? ` ${error.data.message}` : '';
      throw new QqApiError(
        `QQ answered ${method} ${path} with HTTP ${response.status}${code !== undefined ? ` (code ${code})` : ''}${detail}`,
        response.status,
        code,
      );
    }
    return answer;
  }
}

const enc = (id: string) => encodeURIComponent(id);

const request = (url: string, init: RequestInit) => platformRequest('QQ', url, init, TIMEOUT_MS);

const readJson = (response: Response, what: string) =>
  readPlatformJson(
    response,
    () =>
      new QqApiError(`QQ answered ${what} with something that is not JSON (HTTP ${response.status})`, response.status),
  );
