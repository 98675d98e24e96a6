/**
 * The WebSocket channel: nanobot's WebSocket protocol and the WebUI on one port (default 127.0.0.1:8765).
 *
 * A connection gets `ready` with a default chat id (legacy frames go there) and can run many chats: `new_chat`
 * mints one, `attach` subscribes to an existing one (after a reload), `message` sends on one (attaching it first).
 * Each chat is the session `websocket:<chat_id>`; what the agent says in it is fanned out to every connection
 * attached to it (two tabs stay in step). A bad frame gets an `error` frame and the connection stays open.
 */

import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import type { MessageBus } from '../../bus/message-bus.js';
import { commandWord, PRIORITY_COMMANDS } from '../../bus/priority.js';
import type { InboundMessage, OutboundMessage } from '../../bus/types.js';
import type { VoiceService } from '../../providers/voice.js';
import { AuthLimiter } from '../../security/auth-limiter.js';
import { IssuedTokens } from '../../security/issued-tokens.js';
import { errorMessage } from '../../util/errors.js';
import { type Logger, silentLogger } from '../../util/log.js';
import { PACKAGE_ROOT } from '../../util/paths.js';
import { type ChatAdmission, isAllowed } from '../access.js';
import type { Channel, ChannelCapabilities, ChannelEvents, ChannelStatus } from '../channel.js';
import { META } from '../metadata.js';
import type { PairingStore } from '../pairing.js';
import type { DeliverySwitches } from '../settings.js';
import type { WebUiBackend, WebUiHost } from './backend.js';
import { forkChat } from './fork.js';
import type { ClientEnvelope, GoalStateBlob, InlineAttachment, ServerFrame } from './frames.js';
import { goalShown, goalStateBlob } from './goal-state.js';
import { startWebUiServer, type WebUiServer } from './http.js';
import { decodeInlineMedia, storeInlineMedia } from './inline-media.js';
import { MediaRefs } from './media-refs.js';
import { MediaSigner } from './media-urls.js';
import { framesFor } from './outbound.js';
import { FlushScheduler, Outbox } from './outbox.js';
import { type ClientFrame, FRAME_CEILING_FACTOR, type FrameRef, oversizeDetail, parseClientFrame } from './protocol.js';
import { handleApi, serveSignedMedia } from './rest.js';
import type { SessionsApiOptions } from './sessions-api.js';
import { hostForUrl, normalizePath, type WebSocketSettings } from './settings.js';
import { SidebarStateStore } from './sidebar-state.js';
import { resolveToken } from './token.js';
import { transcriptionEvent } from './transcribe.js';
import { WebuiTranscripts } from './transcript.js';
import { EVENT_META } from './turn-events.js';
import { TurnLifecycle, type TurnModel, WEBUI_TURN_ID } from './turn-lifecycle.js';
import { handleWebuiRequest } from './webui-requests.js';

export const WEBSOCKET_CHANNEL = 'websocket';
/** Where `npm run build` puts the WebUI. */
export const DEFAULT_WEBUI_DIR = join(PACKAGE_ROOT, 'dist', 'webui');
/** Chats one connection may be attached to at once. */
const MAX_CHATS_PER_CONNECTION = 64;

export interface WebSocketChannelOptions {
  settings: () => WebSocketSettings;
  /** `<data dir>`: the token file and `media/websocket/` (uploads) live here. */
  dataDir: string;
  switches?: () => DeliverySwitches;
  pairing?: PairingStore;
  log?: Logger;
  /** The built WebUI; default `dist/webui` of the package. */
  webuiDir?: string;
  /** Wrong-token limiter; kept across restarts of the channel. Default: 10 failures a minute per address. */
  authLimiter?: AuthLimiter;
  /** Short-lived tokens from the bootstrap (tests inject one with a clock). */
  tokens?: IssuedTokens;
  /** Voice input (`transcribe_audio`): the shared speech-to-text service. */
  voice?: VoiceService;
}

interface Client {
  socket: WebSocket;
  /** The TCP connection under `socket`: corked while a batch of frames is written, so they leave in one write. */
  transport: Duplex;
  outbox: Outbox;
  clientId: string;
  defaultChat: string;
  chats: Set<string>;
  alive: boolean;
}

export class WebSocketChannel implements Channel, WebUiHost {
  readonly name = WEBSOCKET_CHANNEL;
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: 1_000_000,
    markup: 'markdown',
    editMessages: true,
    media: true,
    threads: false,
    buttons: false,
  };
  private readonly log: Logger;
  private readonly media = new MediaRefs();
  /** Signed URLs for the files the agent sends (`/api/media/<sig>/<payload>`, no token). */
  private readonly signer: MediaSigner;
  private readonly authLimiter: AuthLimiter;
  private readonly tokens: IssuedTokens;
  private readonly lifecycle = new TurnLifecycle();
  private readonly subscribers = new Map<string, Set<Client>>();
  private readonly clients = new Set<Client>();
  private readonly flushes = new FlushScheduler((err) =>
    this.log.debug(`${this.name}: writing frames failed: ${errorMessage(err)}`),
  );
  private state: ChannelStatus = 'stopped';
  private bus?: MessageBus;
  private http?: WebUiServer;
  private wss?: WebSocketServer;
  private pingTimer?: NodeJS.Timeout;
  private backend?: WebUiBackend;
  private listening?: { host: string; port: number; token: string | undefined };

  /** nanobot's WebUI transcripts, so a chat continued here shows in its WebUI too. */
  private readonly transcripts: WebuiTranscripts;
  /** nanobot's session routes and chat-management requests: transcripts, sidebar state. */
  private readonly sessionsApi: SessionsApiOptions;

  constructor(private readonly options: WebSocketChannelOptions) {
    this.authLimiter = options.authLimiter ?? new AuthLimiter();
    this.tokens = options.tokens ?? new IssuedTokens();
    this.log = options.log ?? silentLogger;
    this.transcripts = new WebuiTranscripts(join(options.dataDir, 'webui'), this.name, this.log);
    this.sessionsApi = {
      channel: this.name,
      transcripts: this.transcripts,
      sidebar: new SidebarStateStore(join(options.dataDir, 'webui')),
      signMedia: (path) => this.signer.sign(path),
      runStartedAt: (chatId) => this.lifecycle.startedAt(chatId),
      activeTurn: (chatId) => this.lifecycle.activeTurn(chatId),
    };
    this.signer = new MediaSigner(join(options.dataDir, 'media'));
  }

  /** Any chat when allowFrom is `"*"` (the default); otherwise a chat an allowed client follows now. */
  admitsChat(chatId: string): ChatAdmission {
    if (this.options.settings().allowFrom.includes('*')) return { ok: true };
    for (const client of this.clients)
      if (client.chats.has(chatId) && this.allowed(client.clientId)) return { ok: true };
    return { ok: false, why: `no allowed WebSocket client follows chat ${JSON.stringify(chatId)}` };
  }

  status(): ChannelStatus {
    return this.state;
  }

  /** Where it listens, once started (the port is the real one when 0 was asked for). */
  get address(): { host: string; port: number } | undefined {
    return this.listening ? { host: this.listening.host, port: this.listening.port } : undefined;
  }

  bindBackend(backend: WebUiBackend): void {
    this.backend = backend;
  }

  async start(bus: MessageBus, _events?: ChannelEvents): Promise<void> {
    this.bus = bus;
    this.state = 'starting';
    const settings = this.options.settings();
    try {
      const token = settings.websocketRequiresToken
        ? await resolveToken(settings.token, this.options.dataDir)
        : undefined;
      this.wss = new WebSocketServer({
        noServer: true,
        maxPayload: settings.maxMessageBytes * FRAME_CEILING_FACTOR,
        clientTracking: false,
      });
      this.http = await startWebUiServer({
        settings,
        token,
        assetsDir: settings.webui ? (this.options.webuiDir ?? DEFAULT_WEBUI_DIR) : undefined,
        api: (req, res, url) =>
          handleApi(req, res, url, {
            backend: () => this.backend,
            media: this.media,
            uploadDir: join(this.options.dataDir, 'media', this.name),
            maxUploadBytes: () => this.options.settings().maxMediaMb * 1024 * 1024,
            sessionKey: (chatId) => `${this.name}:${chatId}`,
            wsPath: normalizePath(settings.path),
            sessionsApi: this.sessionsApi,
          }),
        signedMedia: (req, res, url) =>
          serveSignedMedia(req, res, url, this.signer, join(this.options.dataDir, 'media')),
        upgrade: (req, socket, head, url) => this.upgrade(req, socket, head, url),
        onError: (message) => this.log.warn(`${this.name}: ${message}`),
        authLimiter: this.authLimiter,
        tokens: this.tokens,
        modelName: () => this.backend?.model().model ?? '',
      });
      this.listening = { host: settings.host, port: this.http.port, token };
    } catch (err) {
      this.state = 'error';
      this.wss?.close();
      throw err;
    }
    this.pingTimer = setInterval(() => this.ping(), settings.pingIntervalS * 1000);
    this.pingTimer.unref();
    this.state = 'running';
    this.log.info(`${this.name}: WebUI and WebSocket on http://${hostForUrl(settings.host)}:${this.http.port}/`);
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    clearInterval(this.pingTimer);
    // What the agent said last (a reply during shutdown) goes out before the goodbye.
    for (const client of this.clients) client.outbox.flush();
    for (const client of this.clients) client.socket.close(1001, 'server shutting down');
    this.clients.clear();
    this.subscribers.clear();
    this.wss?.close();
    await this.http?.close();
    this.http = undefined;
    this.wss = undefined;
  }

  async send(message: OutboundMessage): Promise<void> {
    const agentFrames = message.metadata?.[META.turnStart]
      ? []
      : framesFor(message, this.switches(), (path) => this.signer.sign(path));
    for (const frame of agentFrames) this.transcripts.frame(frame, message.media ?? []);
    const goal = message.metadata?.[META.turnEnd] === true ? await this.goalOf(message.chatId) : undefined;
    const frames = this.lifecycle.frames(message, agentFrames, () => this.turnModel(), goal);
    const targets = this.subscribers.get(message.chatId);
    if (!targets?.size && frames.some((item) => !item.everyone)) {
      this.log.debug(`${this.name}: nobody is attached to ${message.chatId}; dropped a frame`);
    }
    for (const { frame, everyone } of frames) {
      for (const client of everyone ? this.clients : (targets ?? [])) this.sendFrame(client, frame);
    }
  }

  /** The chat's sustained goal as its session holds it (undefined before the gateway binds the backend). */
  private async goalOf(chatId: string): Promise<GoalStateBlob | undefined> {
    if (!this.backend) return undefined;
    try {
      return goalStateBlob((await this.backend.sessions().load(`${this.name}:${chatId}`)).metadata);
    } catch (error) {
      this.log.debug(`${this.name}: could not read the goal of ${chatId}: ${errorMessage(error)}`);
      return undefined;
    }
  }

  /**
   * What a client attaching to a chat would otherwise miss until the next turn (nanobot's hydration): the goal strip
   * while a goal is active or blocked, then `goal_status running` while a turn runs.
   */
  private async hydrate(client: Client, chatId: string): Promise<void> {
    const goal = await this.goalOf(chatId);
    if (goal && goalShown(goal)) this.sendFrame(client, { event: 'goal_state', chat_id: chatId, goal_state: goal });
    const startedAt = this.lifecycle.startedAt(chatId);
    if (startedAt === undefined) return;
    const turnId = this.lifecycle.activeTurn(chatId);
    this.sendFrame(client, {
      event: 'goal_status',
      chat_id: chatId,
      status: 'running',
      started_at: startedAt,
      ...(turnId ? { turn_id: turnId } : {}),
    });
  }

  private turnModel(): TurnModel | undefined {
    const model = this.backend?.model();
    return model ? { model: model.model, contextWindowTokens: model.contextWindowTokens } : undefined;
  }

  private switches(): { sendProgress: boolean; sendToolHints: boolean; showReasoning: boolean } {
    const global = this.options.switches?.() ?? { sendProgress: true, sendToolHints: true, showReasoning: true };
    const settings = this.options.settings();
    return {
      sendProgress: settings.sendProgress ?? global.sendProgress,
      sendToolHints: settings.sendToolHints ?? global.sendToolHints,
      showReasoning: settings.showReasoning ?? global.showReasoning,
    };
  }

  // ── connections ──────────────────────────────────────────────────────────────────────────────────────────

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): void {
    const clientId =
      (url.searchParams.get('client_id') ?? '').trim().slice(0, 128) || `anon-${randomBytes(6).toString('hex')}`;
    if (!this.allowed(clientId)) {
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      this.log.info(`${this.name}: refused client ${clientId} (not in channels.websocket.allowFrom)`);
      return;
    }
    this.wss?.handleUpgrade(req, socket, head, (ws) => this.connected(ws, socket, clientId));
  }

  private allowed(clientId: string): boolean {
    const approved = (id: string) => this.options.pairing?.isApproved(this.name, id) ?? false;
    return isAllowed(this.options.settings(), { id: clientId }, approved);
  }

  private connected(socket: WebSocket, transport: Duplex, clientId: string): void {
    const outbox = new Outbox({
      write: (frames) => this.write(client, frames),
      requestFlush: this.flushes.request,
    });
    const client: Client = {
      socket,
      transport,
      outbox,
      clientId,
      defaultChat: randomUUID(),
      chats: new Set(),
      alive: true,
    };
    this.clients.add(client);
    this.attach(client, client.defaultChat);
    socket.on('pong', () => {
      client.alive = true;
    });
    socket.on('message', (data, isBinary) => {
      void this.onFrame(client, data, isBinary).catch((err: unknown) => {
        this.log.warn(`${this.name}: frame from ${clientId}: ${errorMessage(err)}`);
        this.sendFrame(client, { event: 'error', detail: 'the server could not handle that frame' });
      });
    });
    socket.on('close', () => this.disconnected(client));
    socket.on('error', (err) => this.log.debug(`${this.name}: connection of ${clientId}: ${err.message}`));
    this.sendFrame(client, {
      event: 'ready',
      chat_id: client.defaultChat,
      client_id: clientId,
      upload: { path: '/api/uploads' },
    });
  }

  private disconnected(client: Client): void {
    this.clients.delete(client);
    client.outbox.discard();
    for (const chatId of client.chats) {
      const set = this.subscribers.get(chatId);
      set?.delete(client);
      if (set?.size === 0) this.subscribers.delete(chatId);
    }
    client.chats.clear();
  }

  private attach(client: Client, chatId: string): boolean {
    if (!client.chats.has(chatId) && client.chats.size >= MAX_CHATS_PER_CONNECTION) return false;
    client.chats.add(chatId);
    let set = this.subscribers.get(chatId);
    if (!set) {
      set = new Set();
      this.subscribers.set(chatId, set);
    }
    set.add(client);
    return true;
  }

  private detach(client: Client, chatId: string): void {
    client.chats.delete(chatId);
    const set = this.subscribers.get(chatId);
    set?.delete(client);
    if (set?.size === 0) this.subscribers.delete(chatId);
  }

  private ping(): void {
    for (const client of this.clients) {
      if (!client.alive) {
        client.socket.terminate();
        continue;
      }
      client.alive = false;
      client.socket.ping();
    }
  }

  // ── inbound ──────────────────────────────────────────────────────────────────────────────────────────────

  private async onFrame(client: Client, data: RawData, isBinary: boolean): Promise<void> {
    if (isBinary) {
      this.sendFrame(client, {
        event: 'error',
        detail: 'binary frames are not accepted; upload files with POST /api/uploads',
      });
      return;
    }
    const oversize = oversizeDetail(byteLength(data), this.options.settings().maxMessageBytes);
    if (oversize) {
      this.sendFrame(client, { event: 'error', detail: oversize });
      return;
    }
    const parsed = parseClientFrame(rawText(data));
    if (!parsed.ok) {
      const { ok: _ok, ...error } = parsed;
      this.sendFrame(client, { event: 'error', ...error });
      return;
    }
    await this.handle(client, parsed.frame);
  }

  private async handle(client: Client, frame: ClientFrame): Promise<void> {
    switch (frame.type) {
      case 'new_chat': {
        const chatId = randomUUID();
        if (!this.attach(client, chatId)) return this.tooManyChats(client);
        this.sendFrame(client, { event: 'attached', chat_id: chatId });
        this.sendFrame(client, { event: 'session_updated', chat_id: chatId, scope: 'metadata' });
        return;
      }
      case 'attach':
        if (!this.attach(client, frame.chat_id)) return this.tooManyChats(client);
        this.sendFrame(client, { event: 'attached', chat_id: frame.chat_id });
        return this.hydrate(client, frame.chat_id);
      case 'detach':
        this.detach(client, frame.chat_id);
        return;
      case 'text':
        return this.publish(client, { type: 'message', chat_id: client.defaultChat, content: frame.content });
      case 'message':
        if (!this.attach(client, frame.chat_id)) {
          return this.tooManyChats(client, { chat_id: frame.chat_id, ...turnRef(frame.turn_id) });
        }
        return this.publish(client, frame);
      case 'webui_request':
        return this.webuiRequest(client, frame);
      case 'transcribe_audio':
        return this.sendFrame(
          client,
          await transcriptionEvent(
            frame,
            this.options.voice,
            join(this.options.dataDir, 'media', 'webui-transcription'),
          ),
        );
      case 'fork_chat':
        return this.fork(client, frame);
    }
  }

  /** nanobot's `fork_chat`: the new chat is attached and announced as `new_chat`'s is, then hydrated. */
  private async fork(client: Client, frame: Record<string, unknown>): Promise<void> {
    if (!this.backend) return this.sendFrame(client, { event: 'error', detail: 'session_manager_unavailable' });
    if (client.chats.size >= MAX_CHATS_PER_CONNECTION) return this.tooManyChats(client);
    const forked = await forkChat(
      { store: this.backend.sessions(), transcripts: this.transcripts, channel: this.name },
      frame,
    );
    if (!forked.ok) return this.sendFrame(client, { event: 'error', detail: forked.detail });
    if (!this.attach(client, forked.chatId)) return this.tooManyChats(client);
    this.sendFrame(client, { event: 'attached', chat_id: forked.chatId });
    this.sendFrame(client, { event: 'session_updated', chat_id: forked.chatId, scope: 'metadata' });
    return this.hydrate(client, forked.chatId);
  }

  private async webuiRequest(client: Client, frame: Record<string, unknown>): Promise<void> {
    const answer = await handleWebuiRequest(frame, {
      backend: () => this.backend,
      sessions: this.sessionsApi,
      broadcastSidebar: (state) => {
        for (const other of this.clients) this.sendFrame(other, { event: 'sidebar_state_updated', state });
      },
    });
    if ('invalidId' in answer) this.sendFrame(client, { event: 'error', detail: 'invalid webui request_id' });
    else this.sendFrame(client, answer);
  }

  private tooManyChats(client: Client, ref: FrameRef = {}): void {
    this.sendFrame(client, {
      event: 'error',
      detail: `a connection can follow at most ${MAX_CHATS_PER_CONNECTION} chats; detach some first`,
      ...ref,
    });
  }

  /** The message's text and attachment paths, or why it is refused. */
  private async admit(client: Client, frame: MessageEnvelope): Promise<{ text: string; media: string[] } | Refusal> {
    // allowFrom may have changed since the connection was made (a config reload).
    if (!this.allowed(client.clientId)) return { refused: 'this client is no longer allowed' };
    const media = await this.attachmentPaths(frame.media ?? []);
    if ('refused' in media) return media;
    const text = frame.content.trim();
    if (!text && media.paths.length === 0) return { refused: 'empty message' };
    return { text, media: media.paths };
  }

  private async publish(client: Client, frame: MessageEnvelope): Promise<void> {
    const chatId = frame.chat_id;
    const admitted = await this.admit(client, frame);
    if ('refused' in admitted) {
      const { refused, ...why } = admitted;
      this.sendFrame(client, { event: 'error', detail: refused, ...why, chat_id: chatId, ...turnRef(frame.turn_id) });
      return;
    }
    const { text, media } = admitted;
    const settings = this.options.settings();
    const inbound: InboundMessage = {
      channel: this.name,
      senderId: client.clientId,
      chatId,
      content: text,
      ...(media.length ? { media } : {}),
      metadata: {
        [META.messageId]: randomBytes(8).toString('hex'),
        client_id: client.clientId,
        ...(settings.streaming ? { [META.wantsStream]: true } : {}),
        [EVENT_META.wantsEvents]: true,
        ...(frame.webui ? { webui: true } : {}),
        ...(frame.turn_id ? { [WEBUI_TURN_ID]: frame.turn_id } : {}),
      },
      timestamp: new Date().toISOString(),
    };
    const accepted = frame.turn_id ? this.lifecycle.accept(chatId, frame.turn_id, isCommand(text)) : undefined;
    // Other tabs on this chat see what was sent, and which turn it starts.
    const echo: ServerFrame = {
      event: 'user_message',
      chat_id: chatId,
      text,
      starts_turn: accepted?.starts_turn ?? !isCommand(text),
      ...(accepted ? { turn_id: accepted.turn_id } : {}),
      ...(accepted?.active_turn_id ? { active_turn_id: accepted.active_turn_id } : {}),
    };
    for (const other of this.subscribers.get(chatId) ?? []) if (other !== client) this.sendFrame(other, echo);
    this.transcripts.user(chatId, text, media);
    this.bus?.publishInbound(inbound);
    if (accepted) this.sendFrame(client, accepted);
  }

  /** Upload references → their files; inline files → saved like uploads (nanobot's `attachment_rejected` if not). */
  private async attachmentPaths(
    attachments: readonly (string | InlineAttachment)[],
  ): Promise<{ paths: string[] } | Refusal> {
    const paths: string[] = [];
    for (const ref of attachments) {
      if (typeof ref !== 'string') continue;
      const file = this.media.get(ref);
      if (!file) return { refused: `unknown or expired upload ${ref}` };
      paths.push(file.path);
    }
    const inline = attachments.filter((item): item is InlineAttachment => typeof item !== 'string');
    if (inline.length === 0) return { paths };
    const decoded = decodeInlineMedia(inline, this.options.settings().maxMediaMb * 1024 * 1024);
    if (!decoded.ok) return { refused: 'attachment_rejected', reason: decoded.reason, hint: decoded.hint };
    return {
      paths: [...paths, ...(await storeInlineMedia(decoded.files, join(this.options.dataDir, 'media', this.name)))],
    };
  }

  private sendFrame(client: Client, frame: ServerFrame): void {
    if (client.socket.readyState !== WebSocket.OPEN) return;
    client.outbox.push(frame);
  }

  /** One batch of frames for one connection, in one socket write. */
  private write(client: Client, frames: ServerFrame[]): void {
    const { socket, transport } = client;
    if (socket.readyState !== WebSocket.OPEN) return;
    if (frames.length === 1) {
      socket.send(JSON.stringify(frames[0]));
      return;
    }
    transport.cork();
    try {
      for (const frame of frames) socket.send(JSON.stringify(frame));
    } finally {
      transport.uncork();
    }
  }
}

/** Commands answered beside a turn (the gateway's priority commands): they do not start one. */
const BESIDE_TURN: ReadonlySet<string> = new Set(PRIORITY_COMMANDS);

function isCommand(text: string): boolean {
  return BESIDE_TURN.has(commandWord(text));
}

/** Why a message was not taken: `detail`, and for refused attachments nanobot's `reason` and `hint`. */
interface Refusal {
  refused: string;
  reason?: string;
  hint?: string;
}

type MessageEnvelope = Extract<ClientEnvelope, { type: 'message' }>;

function turnRef(turnId: string | undefined): { turn_id?: string } {
  return turnId ? { turn_id: turnId } : {};
}

function byteLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, part) => sum + part.length, 0);
  return data.byteLength;
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}
