/**
 * Personal WeChat over iLink's HTTP long-poll: getupdates with a saved cursor (advanced only after a batch has been
 * handed on, so a crash re-reads rather than loses), a watchdog on every poll, replies with the chat's context token
 * (WeChat lets a bot answer only people who wrote to it, and only a few messages per message received), media
 * through the CDN, typing through a per-chat ticket. A stale token is said plainly: log in again.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import type {
  AttachmentKind,
  ChatPlatform,
  IncomingAttachment,
  OutgoingFile,
  OutgoingPart,
  PlatformLink,
  ReplyTarget,
} from '../platform.js';
import { IlinkApi, IlinkError, IlinkHttpError } from './api.js';
import { type MediaItem, messageId, toIncoming, weixinMessage } from './inbound.js';
import type { WeixinSettings } from './index.js';
import { EXPIRED_HINT, EXPIRED_MESSAGE, LOGIN_HINT, safeBaseUrl } from './login.js';
import { ITEM } from './media.js';
import {
  type Account,
  effectiveToken,
  emptyAccount,
  fingerprint,
  readAccount,
  updateAccount,
  watchAccount,
} from './state.js';
import { sanitizeForWeixin } from './text.js';
import { cdnOpener, uploadFile } from './transfer.js';

/** What WeChat shows in one message comfortably (upstream's limit). */
export const WEIXIN_MAX_CHARS = 1800;
/** A context token older than this is refreshed through getconfig before a send (they expire after ~1.5 min idle). */
const CONTEXT_MAX_AGE_MS = 60_000;
const MAX_CONTEXTS = 2000;
const MAX_DEFERRED_PER_CHAT = 20;
const API_TIMEOUT_MS = 15_000;
const TYPING_TICKET_TTL_S = 12 * 60 * 60;
/** Longest Retry-After a send waits out itself; longer, the send fails (and the router retries the message). */
const MAX_SEND_WAIT_MS = 30_000;
/** Business errors in a row before the poll hands the connection back to the manager. */
const MAX_POLL_FAILURES = 3;

const updatesAnswer = z.looseObject({
  msgs: z.array(z.unknown()).nullish().catch([]),
  get_updates_buf: z.string().nullish().catch(''),
  longpolling_timeout_ms: z.coerce.number().nullish().catch(undefined),
});
const configAnswer = z.looseObject({
  typing_ticket: z.string().nullish().catch(''),
  context_token: z.string().nullish().catch(''),
});
const anyAnswer = z.looseObject({});

interface Context {
  token: string;
  at: number;
}

interface Deferred {
  item: Record<string, unknown>;
  clientId: string;
}

export interface WeixinPlatformOptions {
  settings: () => WeixinSettings;
  stateDir: string;
  log: Logger;
  fetch?: typeof fetch;
  now?: () => number;
}

export class WeixinPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: WEIXIN_MAX_CHARS,
    markup: 'markdown',
    editMessages: false,
    media: true,
    threads: false,
    buttons: false,
  };

  private api?: IlinkApi;
  private token = '';
  /** The token the account file held when this connection read it (a newer login's file is not overwritten). */
  private loadedToken = '';
  private account: Account = emptyAccount();
  private cursor = '';
  private readonly contexts = new Map<string, Context>();
  private readonly sendCounts = new Map<string, number>();
  private readonly deferred = new Map<string, Deferred[]>();
  /** Tokens WeChat called stale: not used again until a new login is saved. */
  private readonly expired = new Set<string>();
  private pollTimeoutMs = 35_000;
  private controller?: AbortController;
  private loop?: Promise<void>;
  private saving: Promise<void> = Promise.resolve();
  private readonly now: () => number;

  constructor(private readonly options: WeixinPlatformOptions) {
    this.now = options.now ?? Date.now;
  }

  async connect(link: PlatformLink): Promise<void> {
    const settings = this.options.settings();
    this.loadAccount(settings);
    // Not a setup mistake the manager gives up on: it tries again, and at once when `watchSetup` sees a login saved
    // meanwhile (in the terminal or the WebUI), so no restart is needed.
    if (!this.token) throw new Error(`WeChat is not logged in (no bot token saved). ${LOGIN_HINT}`);
    if (this.expired.has(fingerprint(this.token))) throw new Error(`${EXPIRED_MESSAGE} ${EXPIRED_HINT}`);
    const baseUrl = safeBaseUrl(this.account.base_url, settings.baseUrl) ?? settings.baseUrl;
    this.api = new IlinkApi({
      baseUrl,
      token: () => this.token,
      routeTag: settings.routeTag ?? undefined,
      ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
    });
    this.pollTimeoutMs = settings.pollTimeout * 1000;
    const controller = new AbortController();
    this.controller = controller;
    // A cheap authenticated call: an unreachable server or a stale token fails the start instead of the first poll.
    try {
      await this.api.post('ilink/bot/msg/notifystart', {}, anyAnswer, {
        timeoutMs: API_TIMEOUT_MS,
        signal: controller.signal,
      });
    } catch (err) {
      if (err instanceof IlinkError && err.sessionExpired) throw this.markExpired();
      if (!(err instanceof IlinkError)) throw err;
      // Other answers to this best-effort call do not stop the channel (upstream ignores them too).
    }
    this.loop = this.poll(link, controller.signal).catch((err: unknown) => {
      if (!controller.signal.aborted) link.failed(err instanceof Error ? err : new Error(String(err)));
    });
  }

  async disconnect(): Promise<void> {
    const controller = this.controller;
    this.controller = undefined;
    if (!controller) return;
    controller.abort();
    await this.loop;
    this.loop = undefined;
    await this.save();
    await this.saving;
  }

  directChatWith(chatId: string): { id: string; username?: string } | undefined {
    return chatId.endsWith('@chatroom') ? undefined : { id: chatId, username: chatId.split('@')[0] ?? chatId };
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    const text = sanitizeForWeixin(part.text);
    return this.sendItem(target.chatId, { type: ITEM.text, text_item: { text } });
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const { cdnBaseUrl } = this.options.settings();
    const item = await uploadFile(this.connected(), { cdnBaseUrl, fetch: this.options.fetch }, target.chatId, file);
    await this.sendItem(target.chatId, item);
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    const api = this.api;
    const context = this.contexts.get(target.chatId);
    if (!api || !context) return;
    try {
      const ticket = await this.typingTicket(api, target.chatId, context.token);
      if (!ticket) return;
      await api.post(
        'ilink/bot/sendtyping',
        { ilink_user_id: target.chatId, typing_ticket: ticket, status: 1 },
        anyAnswer,
        { timeoutMs: API_TIMEOUT_MS },
      );
    } catch (err) {
      this.options.log.debug(`typing for ${target.chatId} failed: ${errorMessage(err)}`);
    }
  }

  // ── receiving ───────────────────────────────────────────────────────────────────────────────────────────

  private async poll(link: PlatformLink, signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      const api = this.connected();
      let answer: z.infer<typeof updatesAnswer>;
      try {
        // The watchdog: a poll that outlives the long-poll window (plus a grace) is a dead connection.
        const grace = Math.min(10_000, this.pollTimeoutMs);
        answer = await api.post('ilink/bot/getupdates', { get_updates_buf: this.cursor }, updatesAnswer, {
          timeoutMs: this.pollTimeoutMs + grace,
          signal,
        });
        failures = 0;
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof IlinkError && err.sessionExpired) {
          if (this.adoptNewLogin()) continue;
          link.failed(this.markExpired());
          return;
        }
        if (err instanceof IlinkHttpError) {
          link.failed(err, err.retryAfterMs);
          return;
        }
        failures += 1;
        if (failures >= MAX_POLL_FAILURES) {
          link.failed(err instanceof Error ? err : new Error(String(err)), 30_000);
          return;
        }
        link.log.warn(`getupdates: ${errorMessage(err)}; trying again`);
        await pause(2_000, signal);
        continue;
      }
      const suggested = answer.longpolling_timeout_ms ?? 0;
      if (suggested > 0) this.pollTimeoutMs = Math.max(5_000, Math.min(suggested, 120_000));
      for (const raw of answer.msgs ?? []) {
        if (signal.aborted) return;
        await this.deliver(link, raw);
      }
      // Only now that the batch is handed on does the cursor move past it.
      if (answer.get_updates_buf && answer.get_updates_buf !== this.cursor) {
        this.cursor = answer.get_updates_buf;
        await this.save();
      }
    }
  }

  private async deliver(link: PlatformLink, raw: unknown): Promise<void> {
    const parsed = weixinMessage.safeParse(raw);
    if (!parsed.success) {
      link.log.warn('getupdates: skipped a message that is not a WeChat message');
      return;
    }
    const message = parsed.data;
    const from = message.from_user_id;
    if (from && message.context_token && message.message_type !== 2) {
      const previous = this.contexts.get(from)?.token;
      this.rememberContext(from, message.context_token);
      if (previous !== message.context_token) await this.flushDeferred(from);
    }
    const incoming = toIncoming(message, (item, kind) => this.opener(item, kind));
    if (!incoming) return;
    try {
      await link.receive(incoming);
    } catch (err) {
      link.log.error(`message ${messageId(message)} from ${from} was not handled: ${errorMessage(err)}`);
    }
  }

  private opener(item: MediaItem, kind: AttachmentKind): IncomingAttachment['open'] | undefined {
    const { cdnBaseUrl, maxMediaMb } = this.options.settings();
    return cdnOpener(item, kind, { cdnBaseUrl, maxBytes: maxMediaMb * 1024 * 1024 + 16, fetch: this.options.fetch });
  }

  // ── sending ─────────────────────────────────────────────────────────────────────────────────────────────

  private async sendItem(chatId: string, item: Record<string, unknown>): Promise<string> {
    const clientId = `nanobot-${randomBytes(10).toString('hex')}`;
    const context = await this.freshContext(chatId);
    if (!context) {
      throw new Error(
        `WeChat lets a bot write only to someone who has written to it: ${chatId} has not (no context token yet)`,
      );
    }
    const budget = this.options.settings().contextMessageBudget;
    if ((this.sendCounts.get(context.token) ?? 0) >= budget) return this.defer(chatId, { item, clientId }, 'budget');
    try {
      await this.post(chatId, context.token, item, clientId);
    } catch (err) {
      if (err instanceof IlinkError && err.contextRestricted) return this.defer(chatId, { item, clientId }, 'limit');
      throw err;
    }
    return clientId;
  }

  private async post(chatId: string, contextToken: string, item: Record<string, unknown>, clientId: string) {
    const api = this.connected();
    const msg = {
      from_user_id: '',
      to_user_id: chatId,
      client_id: clientId,
      message_type: 2,
      message_state: 2,
      item_list: [item],
      context_token: contextToken,
    };
    for (let attempt = 0; ; attempt += 1) {
      try {
        await api.post('ilink/bot/sendmessage', { msg }, anyAnswer, { timeoutMs: API_TIMEOUT_MS });
        break;
      } catch (err) {
        if (err instanceof IlinkError && err.sessionExpired) throw this.markExpired();
        // Slowed down by the server: this part waits and goes again (a retry of the whole reply would repeat parts).
        const wait = err instanceof IlinkHttpError ? err.retryAfterMs : undefined;
        if (wait === undefined || wait > MAX_SEND_WAIT_MS || attempt >= 2) throw err;
        this.options.log.warn(`WeChat asked to slow down; sending to ${chatId} again in ${Math.ceil(wait / 1000)} s`);
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
    this.sendCounts.set(contextToken, (this.sendCounts.get(contextToken) ?? 0) + 1);
  }

  /**
   * WeChat refused more messages on this context token (or nanobot's per-token budget is used): the part waits for
   * the person's next message, which brings a fresh token, instead of being retried into the same wall.
   */
  private defer(chatId: string, entry: Deferred, why: 'budget' | 'limit'): string {
    const queue = this.deferred.get(chatId) ?? [];
    queue.push(entry);
    if (queue.length > MAX_DEFERRED_PER_CHAT) {
      queue.shift();
      this.options.log.warn(`dropped the oldest held message for ${chatId}: more than ${MAX_DEFERRED_PER_CHAT} wait`);
    }
    this.deferred.set(chatId, queue);
    const reason = why === 'limit' ? 'WeChat limits messages per received message' : 'the contextMessageBudget is used';
    this.options.log.warn(`held a message for ${chatId} until they write again (${reason})`);
    return entry.clientId;
  }

  private async flushDeferred(chatId: string): Promise<void> {
    const queue = this.deferred.get(chatId);
    const context = this.contexts.get(chatId);
    if (!queue?.length || !context) return;
    this.deferred.delete(chatId);
    for (const [i, entry] of queue.entries()) {
      try {
        await this.post(chatId, context.token, entry.item, entry.clientId);
      } catch (err) {
        this.deferred.set(chatId, queue.slice(i));
        this.options.log.warn(`held messages for ${chatId} still wait: ${errorMessage(err)}`);
        return;
      }
    }
  }

  private rememberContext(chatId: string, token: string): void {
    this.contexts.delete(chatId);
    this.contexts.set(chatId, { token, at: this.now() });
    if (this.contexts.size > MAX_CONTEXTS) {
      const oldest = this.contexts.keys().next().value;
      if (oldest !== undefined) this.contexts.delete(oldest);
    }
  }

  /** The chat's context token, refreshed through getconfig when it is old (a saved one counts as old). */
  private async freshContext(chatId: string): Promise<Context | undefined> {
    const context = this.contexts.get(chatId);
    if (!context || this.now() - context.at < CONTEXT_MAX_AGE_MS) return context;
    try {
      const answer = await this.connected().post(
        'ilink/bot/getconfig',
        { ilink_user_id: chatId, context_token: context.token },
        configAnswer,
        { timeoutMs: API_TIMEOUT_MS },
      );
      if (answer.context_token && answer.context_token !== context.token) {
        this.rememberContext(chatId, answer.context_token);
        return this.contexts.get(chatId);
      }
    } catch (err) {
      this.options.log.debug(`getconfig for ${chatId}: ${errorMessage(err)}`);
    }
    return context;
  }

  private async typingTicket(api: IlinkApi, chatId: string, contextToken: string): Promise<string> {
    const cached = z
      .looseObject({ ticket: z.string(), next_fetch_at: z.number() })
      .safeParse(this.account.typing_tickets[chatId]);
    if (cached.success && this.now() / 1000 < cached.data.next_fetch_at) return cached.data.ticket;
    const answer = await api.post(
      'ilink/bot/getconfig',
      { ilink_user_id: chatId, context_token: contextToken },
      configAnswer,
      { timeoutMs: API_TIMEOUT_MS },
    );
    const ticket = answer.typing_ticket ?? '';
    this.account.typing_tickets[chatId] = { ticket, next_fetch_at: this.now() / 1000 + TYPING_TICKET_TTL_S };
    return ticket;
  }

  /** A login saved while the channel waits (expired, or not logged in yet) is tried at once. */
  watchSetup(changed: () => void): () => void {
    return watchAccount(this.options.stateDir, (account) => {
      const token = effectiveToken(this.options.settings().token, account);
      if (token && token !== this.token) changed();
    });
  }

  // ── state ───────────────────────────────────────────────────────────────────────────────────────────────

  private loadAccount(settings: WeixinSettings): void {
    const account = readAccount(this.options.stateDir);
    const token = effectiveToken(settings.token, account);
    if (token !== this.token) {
      // Another account (or a fresh login): its cursor and context tokens, not the old ones.
      this.cursor = account?.get_updates_buf ?? '';
      this.contexts.clear();
      // Saved tokens count as old (`at: 0`): the first send refreshes them through getconfig.
      for (const [chat, token] of Object.entries(account?.context_tokens ?? {}))
        this.contexts.set(chat, { token, at: 0 });
    }
    this.account = account ?? emptyAccount();
    this.token = token;
    this.loadedToken = account?.token ?? '';
  }

  /** After a stale-token answer: a login saved since then brings a new token to carry on with. */
  private adoptNewLogin(): boolean {
    const before = this.token;
    this.loadAccount(this.options.settings());
    if (this.token && this.token !== before && !this.expired.has(fingerprint(this.token))) {
      this.options.log.info('a new WeChat login was saved; using it');
      return true;
    }
    return false;
  }

  private markExpired(): Error {
    this.expired.add(fingerprint(this.token));
    this.options.log.error(`${EXPIRED_MESSAGE} ${EXPIRED_HINT}`);
    return new Error(`${EXPIRED_MESSAGE} ${EXPIRED_HINT}`);
  }

  /** Saves the cursor and context tokens, unless a newer login has replaced the file meanwhile. */
  private save(): Promise<void> {
    const next = this.saving.then(async () => {
      try {
        await updateAccount(this.options.stateDir, (current) =>
          (current?.token ?? '') !== this.loadedToken
            ? undefined
            : {
                ...this.account,
                ...(current ?? {}),
                get_updates_buf: this.cursor,
                context_tokens: Object.fromEntries([...this.contexts].map(([chat, context]) => [chat, context.token])),
                typing_tickets: this.account.typing_tickets,
              },
        );
      } catch (err) {
        this.options.log.warn(`could not save the WeChat state: ${errorMessage(err)}`);
      }
    });
    this.saving = next;
    return next;
  }

  private connected(): IlinkApi {
    if (!this.api) throw new Error('WeChat is not connected');
    return this.api;
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
