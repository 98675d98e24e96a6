/**
 * MoChat as a ChatPlatform. Chat ids are MoChat's own: a session id (`session_…`, a one-to-one chat) or a panel id
 * (a group channel), as upstream's chat ids are.
 *
 * Connecting: the session and panel lists are read (for `"*"`), then the socket is opened and the sessions are
 * subscribed with their cursors, so MoChat sends what came since (the catch-up after a drop or a restart), and the
 * panels are subscribed; panels have no cursor, so their latest messages are read over HTTP and what was not seen
 * yet is handled (de-duplicated by message id). When the socket cannot be had, the channel runs on upstream's
 * fallback instead: a long-poll per session (`/api/claw/sessions/watch` from its cursor) and a poll per panel.
 * A lost socket, or a fallback that keeps failing, fails the channel; the framework connects again.
 */
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import type { ChatPlatform, IncomingMessage, OutgoingPart, PlatformLink, ReplyTarget } from '../platform.js';
import { MochatApi } from './api.js';
import { SessionCursors } from './cursors.js';
import { isObject, parseWatchPayload, resolveTarget, stringField, type TargetKind } from './events.js';
import { FallbackWorkers, pause } from './fallback.js';
import { MochatInbound } from './inbound.js';
import { type MochatSettings, rootOf, type SocketIoParser, type SocketIoSdk } from './index.js';
import { OwnMessages } from './own.js';
import { chatMessageEvent, inboxMessage, panelListing } from './pushes.js';
import { MochatSocket, type PushedEvent } from './socket.js';
import { Targets } from './targets.js';

export interface MochatPlatformOptions {
  sdk: SocketIoSdk;
  parser: SocketIoParser | undefined;
  settings: () => MochatSettings;
  dataDir: string;
  log: Logger;
  fetch?: typeof fetch;
}

export class MochatPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: 4000,
    markup: 'markdown',
    editMessages: false,
    media: false,
    threads: false,
    buttons: false,
  };
  private readonly api: MochatApi;
  private readonly cursors: SessionCursors;
  private readonly inbound: MochatInbound;
  private readonly targets: Targets;
  private readonly queues = new Map<string, Promise<void>>();
  private readonly own = new OwnMessages();
  private link?: PlatformLink;
  private socket?: MochatSocket;
  private generation = 0;
  /** Socket connections that failed in a row (maxRetryAttempts); socket losses in a row (the reconnect delay). */
  private socketFailures = 0;
  private socketLosses = 0;
  private socketSince = 0;
  /** Ends this connection's refresh timer and fallback workers. */
  private stopping?: AbortController;
  private readonly workers: FallbackWorkers;

  constructor(private readonly options: MochatPlatformOptions) {
    const settings = options.settings();
    this.api = new MochatApi({
      baseUrl: rootOf('baseUrl', settings.baseUrl),
      token: settings.clawToken,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    this.cursors = new SessionCursors(options.dataDir, options.log);
    this.inbound = new MochatInbound({
      settings: options.settings,
      deliver: (message) => this.deliver(message),
      isOwnMessage: (targetId, id, author, text) => this.own.isOwn(targetId, id, author, text),
      log: options.log,
    });
    this.workers = new FallbackWorkers({
      retryDelayMs: () => options.settings().retryDelayMs,
      failed: (err) => this.link?.failed(err),
    });
    this.targets = new Targets({
      api: this.api,
      cursors: this.cursors,
      log: options.log,
      onNewSessions: (ids) => this.subscribeSessions(ids),
      onNewPanels: (ids) => this.subscribePanels(ids),
    });
  }

  async connect(link: PlatformLink): Promise<void> {
    const generation = ++this.generation;
    this.link = link;
    const stop = new AbortController();
    this.stopping = stop;
    const settings = this.options.settings();
    await this.cursors.load();
    this.targets.seed(settings.sessions, settings.panels);
    await this.targets.refresh();
    const current = () => generation === this.generation;
    // Like upstream's socket client: after maxRetryAttempts failed attempts in a row it stays on HTTP polling.
    const giveUp = settings.maxRetryAttempts > 0 && this.socketFailures >= settings.maxRetryAttempts;
    const socket = giveUp
      ? undefined
      : await this.openSocket(settings, current).then(
          (opened) => {
            this.socketFailures = 0;
            return opened;
          },
          (err: unknown) => {
            this.socketFailures += 1;
            link.log.warn(`${errorMessage(err)}; using HTTP polling instead`);
            return undefined;
          },
        );
    if (!current()) {
      socket?.close();
      throw new Error('mochat was disconnected while connecting');
    }
    if (socket) {
      this.socket = socket;
      this.socketSince = Date.now();
      link.log.info('connected to the MoChat socket');
    } else {
      // Polling needs the API: an unreachable one (or a refused token) fails the connect, and it is tried again.
      await this.api.post('/api/claw/sessions/list', {}, stop.signal);
      if (!current()) throw new Error('mochat was disconnected while connecting');
      link.log.info('connected to MoChat over HTTP polling (the socket could not be opened)');
    }
    await this.catchUpPanels(stop.signal);
    if (!socket) this.ensureWorkers(stop.signal);
    this.refreshLoop(stop.signal);
  }

  async disconnect(): Promise<void> {
    this.generation += 1;
    this.stopping?.abort();
    this.stopping = undefined;
    this.socket?.close();
    this.socket = undefined;
    await this.workers.settled();
    await this.cursors.flush();
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    const resolved = resolveTarget(target.chatId);
    if (!resolved.id) throw new Error(`mochat chat ids are a session id or a panel id, not "${target.chatId}"`);
    const body: Record<string, unknown> = resolved.isPanel
      ? { panelId: resolved.id, content: part.text }
      : { sessionId: resolved.id, content: part.text };
    if (target.replyTo) body.replyTo = target.replyTo;
    const groupId = resolved.isPanel ? this.targets.groupOf(resolved.id) : undefined;
    if (groupId) body.groupId = groupId;
    const path = resolved.isPanel ? '/api/claw/groups/panels/send' : '/api/claw/sessions/send';
    const sent = this.own.sending(resolved.id, part.text);
    let id = '';
    try {
      const answer = await this.api.post(path, body);
      id =
        stringField(answer, 'messageId', '_id', 'id') ||
        stringField(answer.message, 'messageId', '_id', 'id') ||
        stringField(answer.data, 'messageId', '_id', 'id');
    } finally {
      sent(id);
    }
    return id;
  }

  // ---- socket -----------------------------------------------------------------------------------------------

  private async openSocket(settings: MochatSettings, current: () => boolean): Promise<MochatSocket> {
    const url = settings.socketUrl.trim()
      ? rootOf('socketUrl', settings.socketUrl)
      : rootOf('baseUrl', settings.baseUrl);
    const socket = await MochatSocket.open({
      sdk: this.options.sdk,
      parser: this.options.parser,
      url,
      path: settings.socketPath,
      token: settings.clawToken,
      timeoutMs: settings.socketConnectTimeoutMs,
      onPush: (event, payload) => {
        if (current()) this.onPush(event, payload);
      },
      onLost: (reason) => {
        if (!current() || this.socket !== socket) return;
        this.socket = undefined;
        // A socket that stayed up a minute starts the count again.
        if (Date.now() - this.socketSince > 60_000) this.socketLosses = 0;
        // socketReconnectDelayMs doubling up to socketMaxReconnectDelayMs: the least wait before connecting again.
        const delay = Math.min(
          settings.socketMaxReconnectDelayMs,
          settings.socketReconnectDelayMs * 2 ** this.socketLosses,
        );
        this.socketLosses += 1;
        this.link?.failed(new Error(reason), delay);
      },
    });
    this.socket = socket;
    const sessions = await this.subscribeSessions(this.targets.sessionIds());
    const panels = await this.subscribePanels(this.targets.panelIds(), true);
    if (!sessions || !panels || !current()) {
      this.socket = undefined;
      socket.close();
      throw new Error('MoChat socket subscription failed');
    }
    return socket;
  }

  /** Subscribes sessions from their cursors; MoChat answers with what each has since. */
  private async subscribeSessions(ids: string[]): Promise<boolean> {
    const socket = this.socket;
    if (!socket || ids.length === 0) return true;
    const ack = await socket.call('com.claw.im.subscribeSessions', {
      sessionIds: ids,
      cursors: this.cursors.all(),
      limit: this.options.settings().watchLimit,
    });
    if (!ack.result) {
      this.link?.log.warn(`subscribeSessions failed: ${stringField(ack, 'message') || 'unknown error'}`);
      return false;
    }
    const data = ack.data;
    const items = Array.isArray(data)
      ? data
      : isObject(data) && Array.isArray(data.sessions)
        ? data.sessions
        : isObject(data) && 'sessionId' in data
          ? [data]
          : [];
    for (const item of items) await this.onWatchPayload(item, 'session');
    return true;
  }

  private async subscribePanels(ids: string[], initial = false): Promise<boolean> {
    const socket = this.socket;
    if (!socket || (ids.length === 0 && !(initial && this.targets.autoPanels))) return true;
    const ack = await socket.call('com.claw.im.subscribePanels', { panelIds: ids });
    if (!ack.result) this.link?.log.warn(`subscribePanels failed: ${stringField(ack, 'message') || 'unknown error'}`);
    else if (!initial) await this.catchUpPanels(this.stopping?.signal, ids);
    return Boolean(ack.result);
  }

  private onPush(event: PushedEvent, payload: unknown): void {
    const handled =
      event === 'claw.session.events' || event === 'claw.panel.events'
        ? this.onWatchPayload(payload, event === 'claw.session.events' ? 'session' : 'panel')
        : event === 'notify:chat.inbox.append'
          ? this.onInboxAppend(payload)
          : this.onChatMessage(payload);
    handled.catch((err: unknown) => this.options.log.warn(`handling a MoChat ${event} push failed: ${String(err)}`));
  }

  // ---- inbound --------------------------------------------------------------------------------------------

  /** A batch of a session's (or panel's) events, in order, after what was handled there before. */
  private onWatchPayload(raw: unknown, kind: TargetKind): Promise<void> {
    const payload = parseWatchPayload(raw);
    if (!payload) return Promise.resolve();
    const { targetId } = payload;
    return this.serial(`${kind}:${targetId}`, async () => {
      if (kind === 'session' && payload.cursor !== undefined) this.cursors.mark(targetId, payload.cursor);
      if (!payload.events) return;
      // A session new to the agent: its history is not answered, only what comes after.
      if (kind === 'session' && this.targets.warm(targetId)) return;
      for (const event of payload.events) {
        if (kind === 'session' && event.seq !== undefined) this.cursors.mark(targetId, event.seq);
        if (event.message) await this.inbound.process(targetId, event.message, kind);
      }
    });
  }

  private async onChatMessage(raw: unknown): Promise<void> {
    const push = chatMessageEvent(raw);
    if (!push || !this.targets.servesPanel(push.panelId)) return;
    this.targets.noteGroup(push.panelId, push.groupId);
    await this.serial(`panel:${push.panelId}`, () => this.inbound.process(push.panelId, push.event, 'panel'));
  }

  /** A new message in the agent's inbox: a session message (panels come as chat.message pushes). */
  private async onInboxAppend(raw: unknown): Promise<void> {
    const push = inboxMessage(raw);
    if (!push) return;
    const sessionId = await this.targets.sessionOfConverse(push.converseId);
    if (!sessionId) return;
    await this.serial(`session:${sessionId}`, () => this.inbound.process(sessionId, push.event, 'session'));
  }

  /** Panels' latest messages over HTTP: first seen, they only mark what is there; later, what is new is handled. */
  private async catchUpPanels(signal: AbortSignal | undefined, ids = this.targets.panelIds()): Promise<void> {
    for (const panelId of ids) {
      try {
        await this.pollPanel(panelId, signal);
      } catch (err) {
        this.link?.log.warn(`reading panel ${panelId} failed: ${errorMessage(err)}`);
      }
    }
  }

  private async pollPanel(panelId: string, signal: AbortSignal | undefined): Promise<void> {
    const answer = await this.api.post(
      '/api/claw/groups/panels/messages',
      { panelId, limit: Math.min(100, this.options.settings().watchLimit) },
      signal,
    );
    const listing = panelListing(answer, panelId);
    if (!listing) return;
    if (listing.groupId) this.targets.noteGroup(panelId, listing.groupId);
    const first = this.targets.warmPanel(panelId);
    await this.serial(`panel:${panelId}`, async () => {
      for (const event of listing.events) {
        const id = stringField(event.payload, 'messageId');
        if (!first) await this.inbound.process(panelId, event, 'panel');
        else if (id) this.inbound.remember(`panel:${panelId}`, id);
      }
    });
  }

  private async deliver(message: IncomingMessage): Promise<void> {
    await this.link?.receive(message);
  }

  /** One queue per session or panel: its messages reach the framework in order; others do not wait. */
  private serial(key: string, task: () => Promise<void>): Promise<void> {
    const next = (this.queues.get(key) ?? Promise.resolve())
      .then(task)
      .catch((err: unknown) => this.options.log.warn(`handling MoChat ${key} failed: ${String(err)}`));
    this.queues.set(key, next);
    void next.then(() => {
      if (this.queues.get(key) === next) this.queues.delete(key);
    });
    return next;
  }

  // ---- refresh and fallback ---------------------------------------------------------------------------------

  private refreshLoop(signal: AbortSignal): void {
    const interval = Math.max(1000, this.options.settings().refreshIntervalMs);
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      this.targets
        .refresh(Boolean(this.socket))
        .then(() => {
          if (!this.socket && !signal.aborted) this.ensureWorkers(signal);
        })
        .catch((err: unknown) => this.options.log.warn(`refreshing MoChat targets failed: ${String(err)}`))
        .finally(() => {
          running = false;
        });
    }, interval);
    timer.unref();
    signal.addEventListener('abort', () => clearInterval(timer), { once: true });
  }

  private ensureWorkers(signal: AbortSignal): void {
    for (const id of this.targets.sessionIds())
      this.workers.start(`session:${id}`, signal, () => this.watchOnce(id, signal));
    for (const id of this.targets.panelIds()) {
      this.workers.start(`panel:${id}`, signal, async () => {
        await this.pollPanel(id, signal);
        await pause(Math.max(1000, this.options.settings().refreshIntervalMs), signal);
      });
    }
  }

  private async watchOnce(sessionId: string, signal: AbortSignal): Promise<void> {
    const settings = this.options.settings();
    const payload = await this.api.post(
      '/api/claw/sessions/watch',
      {
        sessionId,
        cursor: this.cursors.get(sessionId),
        timeoutMs: settings.watchTimeoutMs,
        limit: settings.watchLimit,
      },
      signal,
      settings.watchTimeoutMs + 15_000,
    );
    await this.onWatchPayload({ sessionId, ...payload }, 'session');
  }
}
