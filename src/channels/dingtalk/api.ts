/**
 * DingTalk's HTTP APIs over fetch: the app access token (POST /v1.0/oauth2/accessToken with appKey + appSecret,
 * cached and renewed five minutes before `expireIn`, and fetched again at once when DingTalk says it is no longer
 * valid), the Stream Mode registration (/v1.0/gateway/connections/open), robot messages to a person
 * (/v1.0/robot/oToMessages/batchSend) or a group (/v1.0/robot/groupMessages/send), the download address of a file a
 * user sent (/v1.0/robot/messageFiles/download), and media upload on the older oapi host. Every call has a timeout;
 * errors name the endpoint and DingTalk's code and message, never the secret or a token.
 */
import { z } from 'zod';
import { UserError } from '../../util/errors.js';
import { platformRequest, readPlatformJson } from '../platform-http.js';

const RENEW_BEFORE_MS = 5 * 60_000;
const TIMEOUT_MS = 15_000;
/** The old API's codes for a token it does not take: 40014 invalid, 42001 expired. */
const OAPI_TOKEN_CODES = new Set([40014, 42001]);

const tokenSchema = z.looseObject({
  accessToken: z.string().min(1),
  expireIn: z.union([z.string(), z.number()]).transform(Number).pipe(z.number().positive()),
});
const errorSchema = z.looseObject({ code: z.string().optional(), message: z.string().optional() });
const connectionSchema = z.looseObject({ endpoint: z.string().min(1), ticket: z.string().min(1) });
const sentSchema = z.looseObject({
  processQueryKey: z.string().optional(),
  invalidStaffIdList: z.array(z.string()).optional(),
  flowControlledStaffIdList: z.array(z.string()).optional(),
});
const uploadSchema = z.looseObject({
  errcode: z.number().optional(),
  errmsg: z.string().optional(),
  media_id: z.string().optional(),
});

export interface DingtalkApiOptions {
  clientId: string;
  clientSecret: string;
  /** https://api.dingtalk.com, or a test's loopback fake. */
  apiBase: string;
  /** https://oapi.dingtalk.com (media upload). */
  oapiBase: string;
  now?: () => number;
}

/** DingTalk answered a call with an error (its `code` says why, e.g. InvalidAuthentication). */
export class DingtalkApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'DingtalkApiError';
  }
}

/** Where a robot message goes: a person by user id (staff id), or a group by its openConversationId. */
export type RobotChat = { kind: 'user'; userId: string } | { kind: 'group'; conversationId: string };

export type UploadType = 'image' | 'voice' | 'video' | 'file';

export interface Subscription {
  type: string;
  topic: string;
}

export class DingtalkApi {
  private token?: { value: string; expiresAt: number };
  private pending?: Promise<string>;
  private readonly now: () => number;

  constructor(private readonly options: DingtalkApiOptions) {
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

  /** Registers a Stream Mode connection: the WebSocket endpoint and the one-time ticket to open it with. */
  async openConnection(
    subscriptions: readonly Subscription[],
    ua: string,
  ): Promise<{ endpoint: string; ticket: string }> {
    const response = await request(this.url('/v1.0/gateway/connections/open'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        clientId: this.options.clientId,
        clientSecret: this.options.clientSecret,
        subscriptions,
        ua,
      }),
    });
    const body = await readJson(response, 'connections/open');
    const parsed = connectionSchema.safeParse(body);
    if (response.ok && parsed.success) return parsed.data;
    throw this.refused(response, body, 'connections/open');
  }

  /** A robot message (`msgKey` + its `msgParam`); resolves to DingTalk's processQueryKey for it. */
  async sendRobotMessage(chat: RobotChat, msgKey: string, msgParam: Record<string, unknown>): Promise<string> {
    const common = { robotCode: this.options.clientId, msgKey, msgParam: JSON.stringify(msgParam) };
    const [path, body] =
      chat.kind === 'group'
        ? ['/v1.0/robot/groupMessages/send', { ...common, openConversationId: chat.conversationId }]
        : ['/v1.0/robot/oToMessages/batchSend', { ...common, userIds: [chat.userId] }];
    const sent = sentSchema.parse(await this.call(path, body));
    if (sent.invalidStaffIdList?.length) {
      throw new DingtalkApiError(`DingTalk knows no user ${sent.invalidStaffIdList.join(', ')} for this robot`, 200);
    }
    if (sent.flowControlledStaffIdList?.length) {
      throw new DingtalkApiError('DingTalk is rate-limiting messages to this user; try again later', 200);
    }
    return sent.processQueryKey ?? '';
  }

  /** The short-lived address of a file a user sent (by the message's downloadCode). */
  async downloadUrl(downloadCode: string): Promise<string> {
    const body = await this.call('/v1.0/robot/messageFiles/download', {
      downloadCode,
      robotCode: this.options.clientId,
    });
    return z.looseObject({ downloadUrl: z.string().min(1) }).parse(body).downloadUrl;
  }

  /** Uploads a file for a robot message; DingTalk answers the media_id to send. */
  async upload(type: UploadType, data: Buffer, name: string, mimeType: string): Promise<string> {
    for (let attempt = 0; ; attempt += 1) {
      const token = await this.accessToken();
      const form = new FormData();
      form.append('media', new Blob([data], { type: mimeType }), name);
      const url = `${this.options.oapiBase.replace(/\/+$/, '')}/media/upload?access_token=${encodeURIComponent(token)}&type=${type}`;
      const response = await request(url, { method: 'POST', body: form });
      const parsed = uploadSchema.safeParse(await readJson(response, 'media/upload'));
      const answer = parsed.success ? parsed.data : {};
      if (answer.errcode !== undefined && OAPI_TOKEN_CODES.has(answer.errcode) && attempt === 0) {
        this.forget(token);
        continue;
      }
      if (response.ok && (answer.errcode ?? 0) === 0 && answer.media_id) return answer.media_id;
      throw new DingtalkApiError(
        `DingTalk answered media/upload with HTTP ${response.status}${answer.errcode ? ` (errcode ${answer.errcode})` : ''}${answer.errmsg ? ` ${answer.errmsg}` : ''}`,
        response.status,
      );
    }
  }

  private url(path: string): string {
    return `${this.options.apiBase.replace(/\/+$/, '')}${path}`;
  }

  private async fetchToken(): Promise<string> {
    const started = this.now();
    const response = await request(this.url('/v1.0/oauth2/accessToken'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ appKey: this.options.clientId, appSecret: this.options.clientSecret }),
    });
    const body = await readJson(response, 'oauth2/accessToken');
    const parsed = tokenSchema.safeParse(body);
    if (!response.ok || !parsed.success) throw this.refused(response, body, 'oauth2/accessToken');
    this.token = { value: parsed.data.accessToken, expiresAt: started + parsed.data.expireIn * 1000 };
    return parsed.data.accessToken;
  }

  /** A refusal of the credentials is a setup mistake (a UserError, not retried until the config changes). */
  private refused(response: Response, body: unknown, what: string): Error {
    const error = errorSchema.safeParse(body);
    const detail = error.success && (error.data.code || error.data.message) ? `: ${describe(error.data)}` : '';
    if (response.status >= 500 || response.status === 429 || response.ok) {
      return new DingtalkApiError(`DingTalk's ${what} failed (HTTP ${response.status}${detail})`, response.status);
    }
    return new UserError(
      `DingTalk refused channels.dingtalk.clientId ${this.options.clientId} with channels.dingtalk.clientSecret (${what}, HTTP ${response.status}${detail}).`,
      'Copy the Client ID and Client Secret again from the app’s 凭证与基础信息 page in the DingTalk developer console.',
    );
  }

  /** A robot API call with the token header; a token DingTalk no longer takes is renewed and the call made again. */
  private async call(path: string, body: unknown): Promise<unknown> {
    for (let attempt = 0; ; attempt += 1) {
      const token = await this.accessToken();
      const response = await request(this.url(path), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-acs-dingtalk-access-token': token },
        body: JSON.stringify(body),
      });
      const answer = await readJson(response, path);
      if (response.ok) return answer;
      const error = errorSchema.safeParse(answer);
      const code = error.success ? error.data.code : undefined;
      // 401 / InvalidAuthentication: the request was refused before anything was sent, so sending again is safe.
      if ((response.status === 401 || code === 'InvalidAuthentication') && attempt === 0) {
        this.forget(token);
        continue;
      }
      throw new DingtalkApiError(
        `DingTalk answered ${path} with HTTP ${response.status}${error.success ? ` ${describe(error.data)}` : ''}`,
        response.status,
        code,
      );
    }
  }

  private forget(token: string): void {
    if (this.token?.value === token) this.token = undefined;
  }
}

function describe(error: { code?: string | undefined; message?: string | undefined }): string {
  return [error.code, error.message].filter(Boolean).join(' ');
}

const request = (url: string, init: RequestInit) => platformRequest('DingTalk', url, init, TIMEOUT_MS);

const readJson = (response: Response, what: string) =>
  readPlatformJson(
    response,
    () =>
      new DingtalkApiError(
        `DingTalk answered ${what} with something that is not JSON (HTTP ${response.status})`,
        response.status,
      ),
  );
