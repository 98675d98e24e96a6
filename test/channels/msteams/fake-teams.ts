/**
 * A loopback Bot Framework + Teams for the msteams channel's tests. It plays every side the bot talks to: the
 * OpenID metadata and signing keys (an RSA key made here with jose, published as a JWKS with Teams' endorsement),
 * Microsoft's login (client-credentials tokens), and the Bot Connector API at its serviceUrl (activities posted by
 * the bot are recorded; members are looked up). `userSays` builds a Teams activity, signs its token as Bot Framework
 * does (iss, aud = appId, serviceurl) and posts it to the bot's messaging endpoint, retrying while the endpoint is
 * not up (as Bot Framework retries). `drop()` makes the login and the connector API fail (connections reset).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';

export const ISSUER = 'https://api.botframework.com';
export const BOT_NAME = 'nanobot';
type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

export interface FakeUser {
  /** The Entra object id (what allowFrom names). */
  aadObjectId: string;
  name?: string;
  /** The sign-in name the members API gives (what `@name` entries in allowFrom match). */
  upn?: string;
}

export interface UserMessage {
  id?: string;
  conversationId: string;
  conversationType?: 'personal' | 'groupChat' | 'channel';
  user: FakeUser;
  text: string;
  /** Puts `<at>nanobot</at>` in front with its mention entity. */
  mentionBot?: boolean;
  attachments?: unknown[];
  tenantId?: string;
}

export interface RecordedActivity {
  conversationId: string;
  /** The activity id in the URL (a reply), if any. */
  replyToId?: string;
  type: string;
  text?: string;
  textFormat?: string;
  attachments?: { contentType: string; contentUrl?: string; name?: string }[];
  authorization?: string;
}

export interface SignOptions {
  key?: KeyPair;
  kid?: string;
  alg?: string;
}

export interface FakeTeams {
  url: string;
  /** The serviceUrl in activities (the connector API's root). */
  serviceUrl: string;
  appId: string;
  appPassword: string;
  botId: string;
  /** The channel keys that point the bot at this fake, listening on `port`. */
  settings(port: number): Record<string, unknown>;
  /** Where the bot's messaging endpoint is (`http://127.0.0.1:<port>/api/messages`). */
  setEndpoint(url: string): void;
  userSays(message: UserMessage): Promise<number>;
  /** The activity `userSays` would post. */
  activityFor(message: UserMessage): Record<string, unknown>;
  /** A token as Bot Framework signs it; `claims` override or (undefined) remove the defaults. */
  sign(claims?: Record<string, unknown>, options?: SignOptions): Promise<string>;
  /** A raw POST to the bot's endpoint. */
  post(body: unknown, headers?: Record<string, string>): Promise<{ status: number; text: string }>;
  /** A key pair the JWKS does not list. */
  strangerKey(): Promise<KeyPair>;
  /** Publishes another key (its endorsements as given) in the JWKS. */
  addKey(kid: string, endorsements: string[]): Promise<KeyPair>;
  posted(): RecordedActivity[];
  messagesIn(conversationId: string): RecordedActivity[];
  /** Files the connector serves (with the bot's token) under /svc/files/<name>, and without under /share/<name>. */
  serveFile(name: string, content: Buffer): { botUrl: string; shareUrl: string };
  /** /svc/files/<name> answers 302 to `location`; returns its URL. */
  serveRedirect(name: string, location: string): string;
  stats: { tokenRequests: number; jwksFetches: number; memberLookups: number; fileRequests: string[] };
  /** Tokens issued so far stop working (a rotated secret, a revoked token). */
  revokeTokens(): void;
  /** The next `count` activity posts are answered `status` (with Retry-After when given). */
  failNext(count: number, status: number, retryAfterS?: number): void;
  drop(): void;
  restore(): void;
  /** Messages the bot tried to post since the last drop, refused. */
  refusedWhileDropped(): number;
  close(): Promise<void>;
}

export async function startFakeTeams(
  options: { appId?: string; appPassword?: string; tokenLifetimeS?: number } = {},
): Promise<FakeTeams> {
  const appId = options.appId ?? '00000000-0000-4000-8000-0000000000b0';
  const appPassword = options.appPassword ?? 'fake-client-secret-0123456789';
  const botId = `28:${appId}`;
  const signing = await generateKeyPair('RS256', { extractable: true });
  const jwks: (JWK & { endorsements?: string[] })[] = [
    { ...(await exportJWK(signing.publicKey)), kid: 'fake-key-1', use: 'sig', endorsements: ['msteams'] },
  ];
  const issued = new Set<string>();
  const users = new Map<string, FakeUser>();
  const files = new Map<string, Buffer>();
  const redirects = new Map<string, string>();
  const posted: RecordedActivity[] = [];
  const stats = { tokenRequests: 0, jwksFetches: 0, memberLookups: 0, fileRequests: [] as string[] };
  let endpoint = '';
  let dropped = false;
  let refused = 0;
  let failures = { count: 0, status: 500, retryAfterS: undefined as number | undefined };
  let nextId = 1;

  const server = http.createServer((req, res) => {
    void handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const serviceUrl = `${url}/svc/`;

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = decodeURI((req.url ?? '/').split('?', 1)[0] ?? '/');
    const body = await readBody(req);
    if (path === '/openid') return json(res, 200, { issuer: ISSUER, jwks_uri: `${url}/keys` });
    if (path === '/keys') {
      stats.jwksFetches += 1;
      return json(res, 200, { keys: jwks });
    }
    if (dropped && (path === '/token' || path.startsWith('/svc/'))) {
      if (req.method === 'POST' && /\/activities/.test(path) && JSON.parse(body || '{}').type === 'message')
        refused += 1;
      req.socket.destroy();
      return;
    }
    if (path === '/token' && req.method === 'POST') return token(res, new URLSearchParams(body));
    if (path.startsWith('/share/')) {
      stats.fileRequests.push(`${path} ${req.headers.authorization ? 'with token' : 'without token'}`);
      const file = files.get(path.slice('/share/'.length));
      return file
        ? void res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(file)
        : json(res, 404, {});
    }
    if (!path.startsWith('/svc/')) return json(res, 404, {});
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!bearer || !issued.has(bearer)) return json(res, 401, { error: { code: 'Unauthorized', message: 'no token' } });
    const rest = path.slice('/svc'.length);
    if (rest.startsWith('/files/')) {
      stats.fileRequests.push(`${rest} with token`);
      const moved = redirects.get(rest.slice('/files/'.length));
      if (moved) return void res.writeHead(302, { location: moved }).end();
      const file = files.get(rest.slice('/files/'.length));
      return file ? void res.writeHead(200, { 'content-type': 'image/png' }).end(file) : json(res, 404, {});
    }
    const member = /^\/v3\/conversations\/([^/]+)\/members\/([^/]+)$/.exec(rest);
    if (member && req.method === 'GET') {
      stats.memberLookups += 1;
      const user = users.get(decodeURIComponent(member[2] ?? ''));
      if (!user) return json(res, 404, { error: { code: 'MemberNotFound', message: 'no such member' } });
      return json(res, 200, {
        id: decodeURIComponent(member[2] ?? ''),
        name: user.name,
        aadObjectId: user.aadObjectId,
        ...(user.upn ? { userPrincipalName: user.upn, email: user.upn } : {}),
      });
    }
    const activity = /^\/v3\/conversations\/([^/]+)\/activities(?:\/([^/]+))?$/.exec(rest);
    if (activity && req.method === 'POST' && failures.count > 0) {
      failures.count -= 1;
      const retry = failures.retryAfterS === undefined ? {} : { 'retry-after': String(failures.retryAfterS) };
      res.writeHead(failures.status, { 'content-type': 'application/json', ...retry });
      res.end(JSON.stringify({ error: { code: 'Throttled', message: `failing with ${failures.status}` } }));
      return;
    }
    if (activity && req.method === 'POST') {
      const sent = JSON.parse(body) as Omit<RecordedActivity, 'conversationId' | 'replyToId'>;
      const replyTo = activity[2] ? decodeURIComponent(activity[2]) : undefined;
      posted.push({
        ...sent,
        conversationId: decodeURIComponent(activity[1] ?? ''),
        ...(replyTo ? { replyToId: replyTo } : {}),
        authorization: req.headers.authorization,
      });
      return json(res, 201, { id: `bot-${nextId++}` });
    }
    return json(res, 404, {});
  }

  function token(res: http.ServerResponse, form: URLSearchParams): void {
    stats.tokenRequests += 1;
    if (form.get('grant_type') !== 'client_credentials' || form.get('scope') !== `${ISSUER}/.default`) {
      json(res, 400, { error: 'invalid_request', error_description: 'AADSTS900144: bad request' });
      return;
    }
    if (form.get('client_id') !== appId || form.get('client_secret') !== appPassword) {
      json(res, 401, {
        error: 'invalid_client',
        error_description: 'AADSTS7000215: Invalid client secret provided.\r\nTrace ID: 1',
      });
      return;
    }
    const access = `fake-bot-token-${randomUUID()}`;
    issued.add(access);
    json(res, 200, { token_type: 'Bearer', expires_in: options.tokenLifetimeS ?? 3600, access_token: access });
  }

  async function sign(claims: Record<string, unknown> = {}, signOptions: SignOptions = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const payload: JWTPayload = {
      iss: ISSUER,
      aud: appId,
      serviceurl: serviceUrl,
      nbf: now - 10,
      exp: now + 3600,
      ...claims,
    };
    for (const [key, value] of Object.entries(payload)) if (value === undefined) delete payload[key];
    return new SignJWT(payload)
      .setProtectedHeader({ alg: signOptions.alg ?? 'RS256', kid: signOptions.kid ?? 'fake-key-1', typ: 'JWT' })
      .sign((signOptions.key ?? signing).privateKey);
  }

  function activityFor(message: UserMessage): Record<string, unknown> {
    const from = {
      id: `29:${message.user.aadObjectId}`,
      name: message.user.name ?? 'User',
      aadObjectId: message.user.aadObjectId,
    };
    users.set(from.id, message.user);
    const mention = `<at>${BOT_NAME}</at>`;
    const tenantId = message.tenantId ?? 'tenant-0000';
    return {
      type: 'message',
      id: message.id ?? `msg-${nextId++}`,
      channelId: 'msteams',
      serviceUrl,
      timestamp: new Date().toISOString(),
      from,
      recipient: { id: botId, name: BOT_NAME },
      conversation: {
        id: message.conversationId,
        conversationType: message.conversationType ?? 'personal',
        tenantId,
        ...(message.conversationType && message.conversationType !== 'personal' ? { isGroup: true } : {}),
      },
      textFormat: 'plain',
      text: message.mentionBot ? `${mention} ${message.text}` : message.text,
      entities: [
        { type: 'clientInfo', locale: 'en-US', platform: 'Web' },
        ...(message.mentionBot ? [{ type: 'mention', mentioned: { id: botId, name: BOT_NAME }, text: mention }] : []),
      ],
      attachments: message.attachments ?? [],
      channelData: { tenant: { id: tenantId } },
    };
  }

  async function post(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, text: await response.text() };
  }

  return {
    url,
    serviceUrl,
    appId,
    appPassword,
    botId,
    settings: (port) => ({
      appId,
      appPassword,
      host: '127.0.0.1',
      port,
      openIdMetadataUrl: `${url}/openid`,
      tokenUrl: `${url}/token`,
      trustedServiceUrlHosts: [new URL(url).host],
    }),
    setEndpoint: (value) => {
      endpoint = value;
    },
    activityFor,
    sign,
    post,
    async userSays(message) {
      const activity = activityFor(message);
      // Bot Framework retries a delivery the endpoint did not take (it is not listening yet, or answered 5xx).
      for (let attempt = 0; ; attempt += 1) {
        try {
          const { status } = await post(activity, { authorization: `Bearer ${await sign()}` });
          if (status < 500 || attempt >= 40) return status;
        } catch (err) {
          if (attempt >= 40) throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async strangerKey() {
      return generateKeyPair('RS256', { extractable: true });
    },
    async addKey(kid, endorsements) {
      const pair = await generateKeyPair('RS256', { extractable: true });
      jwks.push({ ...(await exportJWK(pair.publicKey)), kid, use: 'sig', endorsements });
      return pair;
    },
    posted: () => [...posted],
    messagesIn: (conversationId) =>
      posted.filter((activity) => activity.type === 'message' && activity.conversationId === conversationId),
    serveFile(name, content) {
      files.set(name, content);
      return { botUrl: `${serviceUrl}files/${name}`, shareUrl: `${url}/share/${name}` };
    },
    serveRedirect(name, location) {
      redirects.set(name, location);
      return `${serviceUrl}files/${name}`;
    },
    stats,
    revokeTokens: () => issued.clear(),
    failNext: (count, status, retryAfterS) => {
      failures = { count, status, retryAfterS };
    },
    drop: () => {
      dropped = true;
      refused = 0;
    },
    restore: () => {
      dropped = false;
    },
    refusedWhileDropped: () => refused,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A port nothing listens on now, for the bot's endpoint. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = http.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
