/**
 * A loopback fake of signal-cli's HTTP daemon (`signal-cli -a <number> daemon --http`), speaking its protocol as
 * signal-cli 0.14 does: `GET /api/v1/check` (200, no body), `POST /api/v1/rpc` (JSON-RPC 2.0; `Content-Type:
 * application/json` or 415; a Host header naming the bind address or 421) with send, sendReaction, sendTyping,
 * getUserStatus, listGroups and version, and `GET /api/v1/events` (server-sent events: `event:receive` +
 * `data:{"envelope":…,"account":…}`, a `:` keep-alive now and then).
 *
 * It behaves as the daemon does under `--receive-mode on-connection`: messages people write while no event stream
 * is open wait (on "Signal's servers") and are delivered when one opens. Attachments people send are written into
 * an attachments directory, as signal-cli saves them, and named by id in the envelope. `drop()` cuts every
 * connection and refuses new ones until `restore()`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface FakePerson {
  /** Absent: the person hides their number (Signal then shows only the UUID). */
  number?: string;
  uuid: string;
  name?: string;
  username?: string;
}

export const BOT: FakePerson & { number: string } = {
  number: '+15550000000',
  uuid: '0b0b0b0b-0000-4000-8000-000000000001',
  name: 'Nanobot',
};

export interface SentMessage {
  timestamp: number;
  recipient?: string[];
  groupId?: string;
  message: string;
  textStyle: string[];
  attachments: { contentType: string; filename?: string; data: Buffer }[];
  quote?: { timestamp: number; author: string };
}

export interface UserMessage {
  from: FakePerson;
  text?: string;
  groupId?: string;
  /** Default: a fresh one (the same timestamp and author twice is a redelivery). */
  timestamp?: number;
  mentions?: { person: FakePerson; start: number; length: number }[];
  quote?: { timestamp: number; author: FakePerson; text?: string };
  attachments?: { filename?: string; contentType: string; content: Buffer }[];
}

export interface RpcCall {
  method: string;
  params: Record<string, unknown>;
}

export type FakeSignalCli = Awaited<ReturnType<typeof startFakeSignalCli>>;

export async function startFakeSignalCli(options: { keepAliveMs?: number; host?: string } = {}) {
  const bindHost = options.host ?? '127.0.0.1';
  const attachmentsDir = mkdtempSync(join(tmpdir(), 'fake-signal-attachments-'));
  const people = new Map<string, FakePerson>();
  const groups = new Map<string, { id: string; name: string; members: FakePerson[] }>();
  const sent: SentMessage[] = [];
  const reactions: Record<string, unknown>[] = [];
  const typing: Record<string, unknown>[] = [];
  const calls: RpcCall[] = [];
  const waiting: string[] = [];
  const streams = new Set<http.ServerResponse>();
  const sockets = new Set<Socket>();
  const failures = new Map<string, { code: number; message: string }>();
  /** Ports a Host header may name besides the fake's own (a proxy in front of it: the fake `signal-cli daemon`). */
  const hostPorts = new Set<number>();
  let down = false;
  let opened = 0;
  let clock = 1_700_000_000_000;
  const now = () => Math.max(++clock, Date.now());

  const addPerson = (person: FakePerson) => {
    if (person.number) people.set(person.number, person);
    people.set(person.uuid, person);
    if (person.username) people.set(`u:${person.username.toLowerCase()}`, person);
    return person;
  };
  addPerson(BOT);

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  server.on('connection', (socket) => {
    if (down) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, bindHost, resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://${bindHost.includes(':') ? `[${bindHost}]` : bindHost}:${port}`;
  let keepingAlive = true;
  const keepAlive = setInterval(() => {
    if (keepingAlive) for (const stream of streams) stream.write(':\n');
  }, options.keepAliveMs ?? 15_000);

  function hostAllowed(header: string | undefined): boolean {
    if (!header) return false;
    const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(header);
    if (!match) return false;
    const host = (match[1] ?? '').replace(/^\[|\]$/g, '').toLowerCase();
    const named = Number(match[2]);
    return (
      ['localhost', '127.0.0.1', '::1', bindHost].includes(host) &&
      (!match[2] || named === port || hostPorts.has(named))
    );
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/api/v1/check') {
      res.writeHead(req.method === 'GET' ? 200 : 405).end();
      return;
    }
    if (!hostAllowed(req.headers.host)) {
      res.writeHead(421).end();
      return;
    }
    if (path === '/api/v1/events') {
      if (req.method !== 'GET') return void res.writeHead(405).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      streams.add(res);
      opened += 1;
      res.on('close', () => streams.delete(res));
      // What waited on the servers comes now, in order.
      for (const data of waiting.splice(0)) write(res, data);
      return;
    }
    if (path !== '/api/v1/rpc') return void res.writeHead(404).end();
    if (req.method !== 'POST') return void res.writeHead(405).end();
    if (!(req.headers['content-type'] ?? '').startsWith('application/json')) return void res.writeHead(415).end();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let request: { method?: unknown; params?: unknown; id?: unknown };
    try {
      request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof request;
    } catch {
      return reply(res, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null });
    }
    const method = typeof request.method === 'string' ? request.method : '';
    const params = (typeof request.params === 'object' && request.params !== null ? request.params : {}) as Record<
      string,
      unknown
    >;
    calls.push({ method, params });
    const failure = failures.get(method);
    if (failure) {
      failures.delete(method);
      return reply(res, { jsonrpc: '2.0', error: { ...failure, data: null }, id: request.id });
    }
    try {
      reply(res, { jsonrpc: '2.0', result: rpc(method, params), id: request.id });
    } catch (err) {
      reply(res, { jsonrpc: '2.0', error: { code: -1, message: (err as Error).message, data: null }, id: request.id });
    }
  }

  function reply(res: http.ServerResponse, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  }

  const list = (value: unknown): string[] =>
    value === undefined || value === null ? [] : (Array.isArray(value) ? value : [value]).map(String);

  function target(params: Record<string, unknown>): { recipient?: string[]; groupId?: string } {
    const recipient = list(params.recipient);
    const groupId = list(params.groupId)[0];
    if (groupId) {
      if (!groups.has(groupId)) throw new Error('Invalid group id');
      return { groupId };
    }
    if (recipient.length === 0) throw new Error('No recipients given');
    for (const r of recipient) if (!people.has(r)) throw new Error(`Unregistered user: ${r}`);
    return { recipient };
  }

  function rpc(method: string, params: Record<string, unknown>): unknown {
    switch (method) {
      case 'send': {
        const to = target(params);
        const message = typeof params.message === 'string' ? params.message : '';
        const textStyle = list(params.textStyle ?? params.textStyles);
        for (const style of textStyle) {
          const m = /^(\d+):(\d+):(BOLD|ITALIC|SPOILER|STRIKETHROUGH|MONOSPACE)$/.exec(style);
          if (!m) throw new Error(`Invalid textStyle syntax (${style}) expected 'start:length:STYLE'`);
          if (Number(m[1]) + Number(m[2]) > message.length) throw new Error(`textStyle ${style} is outside the text`);
        }
        const attachments = list(params.attachments ?? params.attachment).map(decodeDataUri);
        if (!message && attachments.length === 0) throw new Error('No message given');
        const timestamp = now();
        const quoteTimestamp = typeof params.quoteTimestamp === 'number' ? params.quoteTimestamp : undefined;
        sent.push({
          timestamp,
          ...to,
          message,
          textStyle,
          attachments,
          ...(quoteTimestamp !== undefined
            ? { quote: { timestamp: quoteTimestamp, author: String(params.quoteAuthor) } }
            : {}),
        });
        return {
          timestamp,
          results: (to.recipient ?? []).map((r) => ({ recipientAddress: { number: r }, type: 'SUCCESS' })),
        };
      }
      case 'sendReaction': {
        target(params);
        if (typeof params.emoji !== 'string' || typeof params.targetTimestamp !== 'number')
          throw new Error('Invalid reaction');
        reactions.push(params);
        return { timestamp: now(), results: [] };
      }
      case 'sendTyping':
        target(params);
        typing.push(params);
        return {};
      case 'getUserStatus':
        return [
          ...list(params.recipient).map((r) => {
            const person = people.get(r);
            return { recipient: r, number: person?.number ?? r, uuid: person?.uuid ?? null, isRegistered: !!person };
          }),
          ...list(params.username).map((u) => {
            const person = people.get(`u:${u.toLowerCase()}`);
            return { recipient: u, username: u, uuid: person?.uuid ?? null, isRegistered: !!person };
          }),
        ];
      case 'listGroups':
        return [...groups.values()].map((g) => ({
          id: g.id,
          name: g.name,
          isMember: true,
          members: g.members.map((m) => m.number ?? m.uuid),
        }));
      case 'version':
        return { version: '0.14.6' };
      default:
        throw Object.assign(new Error('Method not implemented'), { code: -32601 });
    }
  }

  function decodeDataUri(value: string): { contentType: string; filename?: string; data: Buffer } {
    const m = /^data:([^;,]+\/[^;,]+)?(?:;filename=([^;,]+))?;base64,(.*)$/s.exec(value);
    if (!m) throw new Error(`Attachment ${value.slice(0, 40)} is not a data URI (the fake only reads data URIs)`);
    const filename = m[2] ? decodeURIComponent(m[2]) : undefined;
    return {
      contentType: m[1] ?? 'text/plain',
      ...(filename ? { filename } : {}),
      data: Buffer.from(m[3] ?? '', 'base64'),
    };
  }

  function write(res: http.ServerResponse, data: string): void {
    res.write(`event:receive\ndata:${data}\n\n`);
  }

  /** Hands a notification to the open streams, or keeps it until one opens. */
  function deliver(notification: unknown): void {
    const data = JSON.stringify(notification);
    if (streams.size === 0 || down) waiting.push(data);
    else for (const stream of streams) write(stream, data);
  }

  function userSays(message: UserMessage): number {
    const timestamp = message.timestamp ?? now();
    addPerson(message.from);
    const attachments = (message.attachments ?? []).map((a) => {
      const id = `${randomBytes(10).toString('hex')}${a.filename?.match(/\.[a-z0-9]+$/i)?.[0] ?? ''}`;
      writeFileSync(join(attachmentsDir, id), a.content);
      return {
        contentType: a.contentType,
        filename: a.filename ?? null,
        id,
        size: a.content.length,
        width: null,
        height: null,
        caption: null,
        uploadTimestamp: timestamp,
      };
    });
    deliver({
      envelope: {
        source: message.from.number ?? message.from.uuid,
        sourceNumber: message.from.number ?? null,
        sourceUuid: message.from.uuid,
        sourceName: message.from.name ?? null,
        sourceDevice: 1,
        timestamp,
        serverReceivedTimestamp: timestamp + 5,
        serverDeliveredTimestamp: timestamp + 9,
        dataMessage: {
          timestamp,
          message: message.text ?? null,
          expiresInSeconds: 0,
          viewOnce: false,
          ...(message.mentions
            ? {
                mentions: message.mentions.map((m) => ({
                  name: m.person.number ?? m.person.uuid,
                  number: m.person.number ?? null,
                  uuid: m.person.uuid,
                  start: m.start,
                  length: m.length,
                })),
              }
            : {}),
          ...(message.quote
            ? {
                quote: {
                  id: message.quote.timestamp,
                  author: message.quote.author.number ?? message.quote.author.uuid,
                  authorNumber: message.quote.author.number ?? null,
                  authorUuid: message.quote.author.uuid,
                  text: message.quote.text ?? '',
                  attachments: [],
                },
              }
            : {}),
          ...(attachments.length ? { attachments } : {}),
          ...(message.groupId
            ? {
                groupInfo: {
                  groupId: message.groupId,
                  groupName: groups.get(message.groupId)?.name ?? 'Group',
                  revision: 1,
                  type: 'DELIVER',
                },
              }
            : {}),
        },
      },
      account: BOT.number,
    });
    return timestamp;
  }

  const sentTo = (chat: string | FakePerson): SentMessage[] =>
    sent.filter((m) =>
      typeof chat === 'string'
        ? m.groupId === chat || (m.recipient ?? []).includes(chat)
        : (m.recipient ?? []).some((r) => r === chat.number || r === chat.uuid),
    );

  return {
    url,
    port,
    host: bindHost,
    account: BOT.number,
    attachmentsDir,
    sent,
    reactions,
    typing,
    calls,
    addPerson,
    acceptHostPort: (p: number) => hostPorts.add(p),
    addGroup(name: string, members: FakePerson[]): string {
      const id = randomBytes(32).toString('base64');
      groups.set(id, { id, name, members });
      for (const member of members) addPerson(member);
      return id;
    },
    userSays,
    /** A raw notification, as a hostile or broken daemon might send it. */
    push: deliver,
    /** A raw SSE chunk on every open stream. */
    pushRaw(text: string) {
      for (const stream of streams) stream.write(text);
    },
    sentTo,
    /** The texts the bot sent to a person or group, in order (file-only messages left out). */
    messagesTo: (chat: string | FakePerson) =>
      sentTo(chat)
        .map((m) => m.message)
        .filter(Boolean),
    failNext(method: string, error: { code: number; message: string }) {
      failures.set(method, error);
    },
    /** Stops the keep-alives (a daemon that hangs with its streams open). */
    pauseKeepAlive() {
      keepingAlive = false;
    },
    streams: () => streams.size,
    /** Event streams opened so far (one per connection of the channel). */
    streamsOpened: () => opened,
    waiting: () => waiting.length,
    drop() {
      down = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      down = false;
    },
    async close() {
      clearInterval(keepAlive);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(attachmentsDir, { recursive: true, force: true });
    },
  };
}

/** A person with a number and a UUID derived from `n`. */
export function person(n: number, extra: Partial<FakePerson> = {}): FakePerson {
  const hex = n.toString(16).padStart(12, '0');
  return { number: `+1555${String(n).padStart(7, '0')}`, uuid: `aaaaaaaa-0000-4000-8000-${hex}`, ...extra };
}
