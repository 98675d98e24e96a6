/**
 * Discord through discord.js: the gateway WebSocket brings messages from direct messages and guild channels (those in
 * `allowChannels`, when set); replies go through the REST API as Discord Markdown of up to 2000 characters, streamed
 * by editing the message (discord.js queues requests per rate-limit bucket and waits out 429s); typing indicators;
 * attachments both ways.
 *
 * Connection: discord.js resumes a dropped session by itself, and a resumed session replays what was missed. When
 * that does not work (the gateway stays unreachable, or a resume fails) the channel reports the connection lost, the
 * manager rebuilds the client, and the new session fetches what users wrote meanwhile (catch-up.ts).
 */
import { readFile, stat } from 'node:fs/promises';
import type { Client, Message } from 'discord.js';
import { errorMessage, UserError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import type { ChatPlatform, OutgoingFile, OutgoingPart, PlatformLink, ReplyTarget } from '../platform.js';
import { CATCH_UP_LIMIT, ChatCursors, messagesAfter } from './catch-up.js';
import { apiRoot, type DiscordSettings } from './index.js';
import { channelAllowed, toIncoming } from './messages.js';

type DiscordJs = typeof import('discord.js');

const CONNECT_TIMEOUT_MS = 30_000;
/** How long discord.js may try to resume a dropped session on its own before the manager takes over. */
const RESUME_GRACE_MS = 10_000;
/** After a close code that retrying will not fix soon (bad token, intents not enabled). */
const FATAL_RETRY_MS = 300_000;
/** Discord's upload limit for bots in servers without boosts. */
const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
/** Replies never ping anyone: the model cannot @everyone a server or notify people it names. */
const NO_PINGS = { parse: [], replied_user: false };

export interface DiscordPlatformOptions {
  discord: DiscordJs;
  settings: () => DiscordSettings;
  log: Logger;
}

export class DiscordPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: 2000,
    markup: 'markdown',
    editMessages: true,
    media: true,
    threads: true,
    buttons: false,
  };
  private client?: Client;
  /** Kept across reconnects, so a new session knows where each chat left off. */
  private readonly cursors = new ChatCursors();
  /** One queue per chat: messages of a chat reach the framework in order, chats do not wait for each other. */
  private readonly queues = new Map<string, Promise<void>>();
  private proxyWarned = false;

  constructor(private readonly options: DiscordPlatformOptions) {}

  async connect(link: PlatformLink): Promise<void> {
    const settings = this.options.settings();
    const { Client, Events, Partials } = this.options.discord;
    if (settings.proxy && !this.proxyWarned) {
      this.proxyWarned = true;
      link.log.warn('channels.discord.proxy is not supported: discord.js cannot route the gateway through a proxy');
    }
    // Partials.Channel: direct-message channels are not cached, and discord.js drops their messages without it.
    const client = new Client({
      intents: settings.intents,
      partials: [Partials.Channel],
      rest: { api: apiRoot(settings.apiBase) },
    });
    this.client = client;
    const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
    this.listen(client, link);
    try {
      await withTimeout(Promise.all([client.login(settings.token), ready]), CONNECT_TIMEOUT_MS);
    } catch (err) {
      if (this.client === client) this.client = undefined;
      await client.destroy().catch(() => undefined);
      throw describeLoginError(err, settings.intents);
    }
    link.log.info(`connected as @${client.user?.username ?? '?'}`);
  }

  async disconnect(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.destroy();
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    const body = { content: part.text, allowed_mentions: NO_PINGS, ...reference(target) };
    const sent = await this.requireClient().rest.post(this.routes.channelMessages(target.chatId), { body });
    return messageIdOf(sent);
  }

  async editText(target: ReplyTarget, messageId: string, part: OutgoingPart): Promise<void> {
    const body = { content: part.text, allowed_mentions: NO_PINGS };
    await this.requireClient().rest.patch(this.routes.channelMessage(target.chatId, messageId), { body });
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const client = this.requireClient();
    const { size } = await stat(file.path);
    if (size > MAX_UPLOAD_BYTES) {
      throw new Error(`${file.name} is ${(size / 1024 / 1024).toFixed(1)} MB; Discord bots may upload at most 10 MB`);
    }
    const data = await readFile(file.path);
    await client.rest.post(this.routes.channelMessages(target.chatId), {
      body: { attachments: [{ id: 0, filename: file.name }], allowed_mentions: NO_PINGS, ...reference(target) },
      files: [{ name: file.name, data }],
    });
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    await this.client?.rest.post(this.routes.channelTyping(target.chatId));
  }

  private get routes() {
    return this.options.discord.Routes;
  }

  private requireClient(): Client {
    if (!this.client) throw new Error('discord is not connected');
    return this.client;
  }

  private listen(client: Client, link: PlatformLink): void {
    const { Events } = this.options.discord;
    client.on(Events.MessageCreate, (message) => this.onMessage(client, link, message));
    // A new session (not a resumed one) missed whatever was written while no session was connected.
    client.on(Events.ShardReady, () => this.catchUp(client, link));
    client.on(Events.Error, (err) => link.log.warn(`discord.js: ${errorMessage(err)}`));
    client.on(Events.ShardError, (err) => link.log.debug(`gateway error: ${errorMessage(err)}`));
    this.watchGateway(client, link);
  }

  private onMessage(client: Client, link: PlatformLink, message: Message): void {
    const botId = client.user?.id;
    if (!botId || message.author.id === botId || message.system) return;
    if (!channelAllowed(message, this.options.settings().allowChannels)) {
      link.log.debug(`ignored a message in ${message.channelId}: not in allowChannels`);
      return;
    }
    this.cursors.saw(message.channelId, message.id);
    this.enqueue(message.channelId, () => link.receive(toIncoming(message, botId)), link.log);
  }

  private catchUp(client: Client, link: PlatformLink): void {
    for (const [chatId, after] of this.cursors.entries()) {
      this.enqueue(chatId, () => this.catchUpChat(client, link, chatId, after), link.log);
    }
  }

  private async catchUpChat(client: Client, link: PlatformLink, chatId: string, after: string): Promise<void> {
    const botId = client.user?.id;
    if (!botId || this.client !== client) return;
    let page: Awaited<ReturnType<typeof messagesAfter>>;
    try {
      page = await messagesAfter(client, chatId, after);
    } catch (err) {
      const status = (err as { status?: unknown } | null)?.status;
      if (status === 403 || status === 404) this.cursors.forget(chatId);
      link.log.warn(`could not fetch the messages sent in ${chatId} while away: ${errorMessage(err)}`);
      return;
    }
    const missed = page.messages.filter((m) => m.author.id !== botId && !m.system);
    for (const message of missed) {
      if (!channelAllowed(message, this.options.settings().allowChannels)) continue;
      this.cursors.saw(chatId, message.id);
      await link.receive(toIncoming(message, botId));
    }
    if (missed.length > 0) link.log.info(`caught up ${missed.length} message(s) in ${chatId} sent while away`);
    if (page.more) {
      link.log.warn(
        `${CATCH_UP_LIMIT}+ messages were sent in ${chatId} while away; only the first ${CATCH_UP_LIMIT} are read`,
      );
    }
  }

  /**
   * discord.js reconnects on its own. A resume that works within the grace period goes unnoticed (the session
   * replays what was missed); a second failed attempt, or no success within the grace period, is reported as a lost
   * connection so the channel shows "reconnecting" and the manager rebuilds the client with backoff.
   */
  private watchGateway(client: Client, link: PlatformLink): void {
    const { Events } = this.options.discord;
    let attempts = 0;
    let timer: NodeJS.Timeout | undefined;
    let reported = false;
    const lost = (error: Error, retryAfterMs?: number) => {
      clearTimeout(timer);
      if (reported || this.client !== client) return;
      reported = true;
      link.failed(error, retryAfterMs);
    };
    client.on(Events.ShardReconnecting, () => {
      // While logging in, connect() has its own timeout.
      if (!client.isReady()) return;
      attempts += 1;
      if (attempts > 1) {
        lost(new Error('lost the connection to the Discord gateway, and reconnecting failed'));
        return;
      }
      link.log.info('gateway connection dropped; resuming the session');
      const why = `the Discord gateway session did not resume within ${RESUME_GRACE_MS / 1000} s`;
      timer = setTimeout(() => lost(new Error(why)), RESUME_GRACE_MS);
      timer.unref();
    });
    const recovered = () => {
      if (attempts > 0) link.log.info('gateway session is back');
      attempts = 0;
      clearTimeout(timer);
    };
    client.on(Events.ShardResume, recovered);
    client.on(Events.ShardReady, recovered);
    client.on(Events.ShardDisconnect, (event) => {
      const fatal = describeCloseCode(event.code);
      lost(fatal ?? new Error(`the Discord gateway closed the connection (code ${event.code})`), FATAL_RETRY_MS);
    });
  }

  private enqueue(chatId: string, task: () => Promise<void>, log: Logger): void {
    const previous = this.queues.get(chatId) ?? Promise.resolve();
    const next = previous
      .then(task)
      .catch((err: unknown) => log.warn(`handling a message in ${chatId} failed: ${errorMessage(err)}`));
    this.queues.set(chatId, next);
    void next.then(() => {
      if (this.queues.get(chatId) === next) this.queues.delete(chatId);
    });
  }
}

function reference(target: ReplyTarget) {
  return target.replyTo ? { message_reference: { message_id: target.replyTo, fail_if_not_exists: false } } : {};
}

function messageIdOf(sent: unknown): string {
  const id = (sent as { id?: unknown } | null)?.id;
  if (typeof id !== 'string') throw new Error('Discord answered without a message id');
  return id;
}

function describeCloseCode(code: number): Error | undefined {
  if (code === 4004) return new Error('Discord rejected the bot token (4004); check channels.discord.token');
  if (code === 4014)
    return new Error('Discord refused the Message Content intent (4014); enable it in the Developer Portal');
  if (code === 4013) return new Error('Discord refused channels.discord.intents as invalid (4013)');
  return undefined;
}

/** Setup mistakes become UserErrors (not retried, shown with a fix); anything else is retried. */
function describeLoginError(err: unknown, intents: number): Error {
  const message = errorMessage(err);
  const code = (err as { code?: unknown; status?: unknown } | null)?.code;
  const status = (err as { status?: unknown } | null)?.status;
  if (code === 'TokenInvalid' || status === 401 || /authentication failed/i.test(message)) {
    return new UserError(
      'Discord rejected channels.discord.token (401 Unauthorized).',
      'Copy the token again from the Developer Portal (Bot → Reset Token).',
    );
  }
  if (/disallowed intents/i.test(message)) {
    return new UserError(
      'Discord refused the privileged intents the bot asks for (Message Content).',
      'In the Developer Portal open your application → Bot → Privileged Gateway Intents and turn on ' +
        '"Message Content Intent".',
    );
  }
  if (/invalid intents/i.test(message)) {
    return new UserError(`channels.discord.intents (${intents}) is not a valid gateway intents value.`);
  }
  if (err instanceof TimeoutError) return new Error('the Discord gateway did not become ready in 30 s');
  return new Error(`cannot connect to Discord: ${message}`);
}

class TimeoutError extends Error {}

async function withTimeout<T>(task: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([task, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
