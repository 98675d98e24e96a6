/**
 * Signal through signal-cli's HTTP daemon: received messages come as server-sent events from /api/v1/events, replies
 * go out by JSON-RPC `send` (plain text with Signal's text styles, files as data URIs), "typing…" by `sendTyping`,
 * and a reaction (`sendReaction`) tells the sender their message reached the agent.
 *
 * Connection: the ChannelManager reconnects (backoff, /health shows it). A stream that ends, errs or stays silent
 * past the daemon's keep-alives is reported as lost. Nothing is lost meanwhile when signal-cli runs with
 * `--receive-mode on-connection` (as `startDaemon` runs it): it fetches from Signal's servers only while a stream is
 * open, so messages wait there; a message delivered twice (same author and timestamp) is answered once.
 */
import { z } from 'zod';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import type {
  ChatPlatform,
  IncomingMessage,
  OutgoingFile,
  OutgoingPart,
  PlatformLink,
  ReplyTarget,
} from '../platform.js';
import { SignalDaemon } from './daemon.js';
import {
  BotIdentity,
  chatIdOf,
  idVariants,
  isPersonId,
  messageIdOf,
  parseMessageId,
  personOf,
  personOfChat,
  readNotification,
  recipientOf,
  type SignalMessage,
  type SignalPerson,
} from './envelope.js';
import { dataUriOf, toAttachment } from './files.js';
import { GroupContext } from './group-context.js';
import { attachmentsDirOf, daemonRoot, type SignalSettings } from './index.js';
import { readEvents, SignalRpc, SignalRpcError } from './rpc.js';
import { styledText } from './styles.js';

/** The daemon sends a keep-alive every 15 s: a stream silent this long is dead. */
const STREAM_IDLE_MS = 60_000;
const SEND_TIMEOUT_MS = 60_000;
const SMALL_TIMEOUT_MS = 10_000;
/** Signal shows "typing…" for 15 s; renewing more often would send a message to the chat each time. */
const TYPING_RENEW_MS = 10_000;

const sendResultSchema = z.looseObject({ timestamp: z.number() });
const userStatusSchema = z.array(
  z.looseObject({
    recipient: z.string().nullish(),
    number: z.string().nullish(),
    username: z.string().nullish(),
    uuid: z.string().nullish(),
    isRegistered: z.boolean().nullish(),
  }),
);

export interface SignalPlatformOptions {
  settings: () => SignalSettings;
  log: Logger;
  /** For tests: how long a silent stream is trusted. */
  idleMs?: number;
}

interface Connection {
  rpc: SignalRpc;
  controller: AbortController;
}

export class SignalPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    // Signal sends a longer text as an attachment that some clients show only as a file: parts stay at 2,000.
    maxMessageLength: 2000,
    markup: 'plain',
    editMessages: false,
    media: true,
    threads: false,
    buttons: false,
  };
  private connection?: Connection;
  private generation = 0;
  private daemon?: SignalDaemon;
  private bot = new BotIdentity('');
  /** Signal usernames named in allowFrom (`@name`), by the UUID Signal's servers say owns them. */
  private usernames = new Map<string, string>();
  private usernamesFor = '';
  private readonly groups = new GroupContext();
  private readonly ignoredGroups = new Set<string>();
  private readonly typingSentAt = new Map<string, number>();
  private readonly queues = new Map<string, Promise<void>>();

  constructor(private readonly options: SignalPlatformOptions) {}

  async connect(link: PlatformLink): Promise<void> {
    const generation = ++this.generation;
    const settings = this.options.settings();
    const rpc = new SignalRpc(daemonRoot(settings));
    const account = settings.phoneNumber.trim();
    if (settings.startDaemon) await this.startDaemon(settings, rpc, link);
    try {
      await rpc.check();
    } catch (err) {
      throw new Error(
        `${errorMessage(err)}. Start it with \`signal-cli -a ${account} daemon --http ${settings.daemonHost}:${settings.daemonPort} ` +
          '--receive-mode on-connection`, or set channels.signal.startDaemon to true',
      );
    }
    if (this.bot.number !== account) this.bot = new BotIdentity(account);
    await this.learnSelf(rpc, account, link.log);
    await this.resolveUsernames(rpc, settings, link.log, true);
    const controller = new AbortController();
    const body = await rpc.openEvents(account, controller.signal);
    if (generation !== this.generation) {
      controller.abort();
      throw new Error('signal was disconnected while connecting');
    }
    const connection: Connection = { rpc, controller };
    this.connection = connection;
    this.consume(connection, body, link).catch((err: unknown) => {
      if (this.connection !== connection) return;
      this.connection = undefined;
      controller.abort();
      link.failed(err instanceof Error ? err : new Error(String(err)));
    });
    link.log.info(`connected to signal-cli at ${rpc.root} as ${account}`);
  }

  async disconnect(): Promise<void> {
    this.generation += 1;
    const connection = this.connection;
    this.connection = undefined;
    connection?.controller.abort();
    await this.daemon?.stop();
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    const { rpc } = this.requireConnection();
    const { text, styles } = styledText(part.markdown, part.text);
    const quote = target.replyTo ? parseMessageId(target.replyTo) : undefined;
    const result = await rpc.call(
      'send',
      {
        ...recipientOf(target.chatId),
        message: text,
        ...(styles.length ? { textStyle: styles } : {}),
        ...(quote ? { quoteTimestamp: quote.timestamp, quoteAuthor: quote.author } : {}),
      },
      sendResultSchema,
      SEND_TIMEOUT_MS,
    );
    return messageIdOf(result.timestamp, {
      number: this.bot.number,
      ...(this.bot.uuid ? { uuid: this.bot.uuid } : {}),
    });
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const { rpc } = this.requireConnection();
    const attachment = await dataUriOf(file);
    await rpc.call(
      'send',
      { ...recipientOf(target.chatId), message: '', attachments: [attachment] },
      sendResultSchema,
      SEND_TIMEOUT_MS,
    );
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    const connection = this.connection;
    if (!connection) return;
    const last = this.typingSentAt.get(target.chatId) ?? 0;
    if (Date.now() - last < TYPING_RENEW_MS) return;
    this.typingSentAt.set(target.chatId, Date.now());
    await connection.rpc.call('sendTyping', recipientOf(target.chatId), z.unknown(), SMALL_TIMEOUT_MS);
  }

  /** A reaction on the user's message: Signal's "seen, working on it". */
  async acknowledge(message: IncomingMessage): Promise<void> {
    const emoji = this.options.settings().reactEmoji.trim();
    const target = parseMessageId(message.id);
    const connection = this.connection;
    if (!emoji || !target || !connection) return;
    await connection.rpc.call(
      'sendReaction',
      { ...recipientOf(message.chatId), emoji, targetAuthor: target.author, targetTimestamp: target.timestamp },
      z.unknown(),
      SMALL_TIMEOUT_MS,
    );
  }

  directChatWith(chatId: string): { id: string; username?: string } | undefined {
    if (!isPersonId(chatId)) return undefined;
    return this.senderOf(personOfChat(chatId), this.options.settings());
  }

  private requireConnection(): Connection {
    if (!this.connection) throw new Error('signal is not connected');
    return this.connection;
  }

  private async startDaemon(settings: SignalSettings, rpc: SignalRpc, link: PlatformLink): Promise<void> {
    if (this.daemon?.running) return;
    // A daemon already answering there (one left running, or started by hand) is used as it is.
    const answering = await rpc.check(1_000).then(
      () => true,
      () => false,
    );
    if (answering) {
      link.log.warn(`startDaemon: a signal-cli daemon already answers at ${rpc.root}; using it`);
      return;
    }
    this.daemon = new SignalDaemon({
      cliPath: settings.cliPath.trim(),
      account: settings.phoneNumber.trim(),
      host: settings.daemonHost.trim(),
      port: settings.daemonPort,
      log: link.log,
    });
    await this.daemon.start(rpc, (error) => {
      if (!this.connection) return;
      this.connection.controller.abort();
      this.connection = undefined;
      link.failed(error);
    });
  }

  /** The account's own UUID, so mentions and quotes of the bot are recognised by it too. */
  private async learnSelf(rpc: SignalRpc, account: string, log: Logger): Promise<void> {
    if (this.bot.uuid) return;
    try {
      const statuses = await rpc.call('getUserStatus', { recipient: [account] }, userStatusSchema, SMALL_TIMEOUT_MS);
      for (const status of statuses) this.bot.add(personOf(undefined, status.uuid).uuid);
    } catch (err) {
      log.debug(`could not look up the account's own UUID: ${errorMessage(err)}`);
    }
  }

  /**
   * `@name` entries of allowFrom are Signal usernames: Signal's servers say which account holds each (looked up at
   * every connect, and when allowFrom changes), and a message from that account carries the name.
   */
  private async resolveUsernames(rpc: SignalRpc, settings: SignalSettings, log: Logger, force = false): Promise<void> {
    const names = settings.allowFrom.filter((entry) => entry.trim().startsWith('@')).map((e) => e.trim().slice(1));
    const key = names.join('\n');
    if (!force && key === this.usernamesFor) return;
    this.usernamesFor = key;
    if (names.length === 0) {
      this.usernames = new Map();
      return;
    }
    try {
      const statuses = await rpc.call('getUserStatus', { username: names }, userStatusSchema, SMALL_TIMEOUT_MS);
      const found = new Map<string, string>();
      for (const status of statuses) {
        const uuid = personOf(undefined, status.uuid).uuid;
        const name = (status.username ?? status.recipient ?? '').replace(/^@/, '');
        if (uuid && status.isRegistered !== false && names.some((n) => n.toLowerCase() === name.toLowerCase()))
          found.set(uuid, name);
      }
      this.usernames = found;
      const missing = names.filter((n) => ![...found.values()].some((v) => v.toLowerCase() === n.toLowerCase()));
      if (missing.length)
        log.warn(`allowFrom names @${missing.join(', @')}, but Signal has no account with that username`);
    } catch (err) {
      log.warn(`could not look up the Signal usernames in allowFrom (they admit nobody for now): ${errorMessage(err)}`);
    }
  }

  private async consume(connection: Connection, body: ReadableStream<Uint8Array>, link: PlatformLink): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const idleMs = this.options.idleMs ?? STREAM_IDLE_MS;
    const alive = () => {
      clearTimeout(timer);
      timer = setTimeout(() => connection.controller.abort(new Error('signal-cli’s event stream went silent')), idleMs);
      timer.unref();
    };
    alive();
    try {
      for await (const event of readEvents(body, alive)) {
        if (event.event !== 'receive') continue;
        let data: unknown;
        try {
          data = JSON.parse(event.data);
        } catch {
          link.log.warn('signal-cli sent an event that is not JSON; skipped');
          continue;
        }
        this.onNotification(connection, link, data);
      }
    } catch (err) {
      if (connection.controller.signal.aborted && this.connection !== connection) return;
      const reason = connection.controller.signal.reason;
      throw new Error(`lost signal-cli's event stream: ${errorMessage(reason instanceof Error ? reason : err)}`);
    } finally {
      clearTimeout(timer);
    }
    throw new Error('signal-cli closed its event stream');
  }

  private onNotification(connection: Connection, link: PlatformLink, data: unknown): void {
    const read = readNotification(data, this.bot);
    if ('skip' in read) {
      link.log.debug(`skipped an event: ${read.skip}`);
      return;
    }
    const message = read.message;
    const chatId = message.groupId ?? chatIdOf(message.sender);
    if (!chatId) return;
    this.enqueue(chatId, () => this.deliver(connection, link, message, chatId), link.log);
  }

  /** One message → the framework, if the settings (direct messages, which groups) say it is for the agent. */
  private async deliver(connection: Connection, link: PlatformLink, message: SignalMessage, chatId: string) {
    const settings = this.options.settings();
    const group = message.groupId;
    if (!group && !settings.dm.enabled) return;
    if (group && !this.groupServed(settings, group, link.log)) return;
    await this.resolveUsernames(connection.rpc, settings, link.log);
    let text = message.text;
    if (group) {
      const forAgent = message.addressed || settings.groupPolicy !== 'mention';
      const label = message.sender.name ?? chatIdOf(message.sender) ?? '';
      if (!forAgent) {
        this.groups.add(group, label, text, settings.groupMessageBufferSize);
        return;
      }
      text = this.groups.withContext(group, text);
    }
    const incoming: IncomingMessage = {
      id: messageIdOf(message.timestamp, message.sender),
      chatId,
      sender: {
        ...this.senderOf(message.sender, settings),
        ...(message.sender.name ? { name: message.sender.name } : {}),
      },
      chatType: group ? 'group' : 'direct',
      text,
      mentioned: message.addressed,
      attachments: message.attachments.map((info) => toAttachment(info, attachmentsDirOf(settings))),
      metadata: {
        timestamp: message.timestamp,
        ...(message.sender.name ? { sender_name: message.sender.name } : {}),
        ...(message.sender.number ? { sender_number: message.sender.number } : {}),
        ...(message.sender.uuid ? { sender_uuid: message.sender.uuid } : {}),
        ...(group ? { group_id: group } : {}),
      },
    };
    await link.receive(incoming);
  }

  private groupServed(settings: SignalSettings, groupId: string, log: Logger): boolean {
    const listed = settings.groupAllowFrom.includes('*') || settings.groupAllowFrom.includes(groupId);
    if (settings.group.enabled && (settings.group.policy === 'open' || listed)) return true;
    if (!this.ignoredGroups.has(groupId)) {
      this.ignoredGroups.add(groupId);
      log.info(
        settings.group.enabled
          ? `ignoring Signal group ${groupId}: add it to channels.signal.group.allowFrom to serve it`
          : `ignoring Signal group ${groupId}: groups are off (channels.signal.group.enabled)`,
      );
    }
    return false;
  }

  /**
   * Who the framework sees: the allowFrom entry that names this person (by phone number, with or without `+`, or
   * UUID, any case), else their number (or UUID, when Signal hides the number); plus the username allowFrom named.
   */
  private senderOf(person: SignalPerson, settings: SignalSettings): { id: string; username?: string } {
    const variants = new Set([...idVariants(person.number), ...idVariants(person.uuid)]);
    const entry = settings.allowFrom.find(
      (e) => e.trim() !== '*' && !e.trim().startsWith('@') && idVariants(e).some((v) => variants.has(v)),
    );
    const username = person.uuid ? this.usernames.get(person.uuid) : undefined;
    return { id: entry?.trim() ?? chatIdOf(person) ?? '', ...(username ? { username } : {}) };
  }

  /** One queue per chat: a chat's messages reach the framework in order, chats do not wait for each other. */
  private enqueue(chatId: string, task: () => Promise<void>, log: Logger): void {
    const previous = this.queues.get(chatId) ?? Promise.resolve();
    const next = previous
      .then(task)
      .catch((err: unknown) =>
        log.warn(
          `handling a message in ${chatId} failed: ${err instanceof SignalRpcError ? err.message : errorMessage(err)}`,
        ),
      );
    this.queues.set(chatId, next);
    void next.then(() => {
      if (this.queues.get(chatId) === next) this.queues.delete(chatId);
    });
  }
}
