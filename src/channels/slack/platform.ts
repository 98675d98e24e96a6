/**
 * Slack through @slack/bolt in Socket Mode: events arrive over a WebSocket the app opens (no public URL), replies go
 * through the Web API as mrkdwn (chat.postMessage, streamed with chat.update), in the thread of the user's message.
 * Files come in via url_private (with the bot token) and go out with files.uploadV2; registered slash commands and
 * button presses arrive as messages. A lost Socket Mode connection is reported to the framework, which reconnects;
 * Slack's routine "please reconnect" notices are handled here without a gap.
 */
import { readFile } from 'node:fs/promises';
import type { App, SocketModeReceiver, webApi } from '@slack/bolt';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import { RecentIds } from '../dedup.js';
import type {
  ChatPlatform,
  IncomingMessage,
  OutgoingFile,
  OutgoingPart,
  PlatformLink,
  ReplyTarget,
  SendOptions,
} from '../platform.js';
import {
  type BotIdentity,
  isDirect,
  isUserMessage,
  mentionsBot,
  type SlackMessageEvent,
  type SlackUser,
  threadContextLines,
  threadOf,
  toIncoming,
} from './events.js';
import { type SlackSdk, type SlackSettings, slackApiUrl } from './index.js';
import {
  BUTTON_ACTION_PREFIX,
  buttonBlocks,
  describeConnectError,
  describeSlackError,
  downloadPrivateFile,
  REQUEST_TIMEOUT_MS,
  RETRY_CONFIG,
  sdkLogger,
  slackErrorCode,
} from './web.js';

type WebClient = webApi.WebClient;

const CONNECT_TIMEOUT_MS = 45_000;
const USER_CACHE_MS = 60 * 60_000;
const USER_FAILURE_CACHE_MS = 10 * 60_000;

export interface SlackPlatformOptions {
  bolt: SlackSdk;
  settings: () => SlackSettings;
  log: Logger;
}

interface Connection {
  app: App;
  receiver: SocketModeReceiver;
  web: WebClient;
  /** We are closing it: its disconnect is not a failure. */
  closing: boolean;
  /** Slack sent a `disconnect` notice (it recycles connections every few hours): reconnect at once. */
  refreshing: boolean;
}

export class SlackPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    // Slack truncates text past 40,000 characters but advises staying under 4,000; parts stay a bit below that.
    maxMessageLength: 3900,
    markup: 'slack-mrkdwn',
    editMessages: true,
    media: true,
    threads: true,
    buttons: true,
  };
  private connection?: Connection;
  /** Bumped by `disconnect`: a connect still under way when it is called gives up instead of going live. */
  private generation = 0;
  private bot: BotIdentity & { teamId?: string } = { userId: '' };
  private readonly users = new Map<string, { user: SlackUser; until: number }>();
  private readonly directChannels = new Map<string, string>();
  /** Threads whose earlier messages the agent has (or does not need): context is fetched once per thread. */
  private readonly threadsKnown = new RecentIds(5000);
  private readonly userLookupWarnings = new Set<string>();
  /** Incoming messages are handled one at a time, in the order Slack sent them. */
  private inbox: Promise<void> = Promise.resolve();

  constructor(private readonly options: SlackPlatformOptions) {}

  async connect(link: PlatformLink): Promise<void> {
    const { bolt } = this.options;
    const generation = ++this.generation;
    const settings = this.options.settings();
    const logger = sdkLogger(link.log, bolt.LogLevel);
    const clientOptions = {
      slackApiUrl: slackApiUrl(settings.apiBase),
      retryConfig: RETRY_CONFIG,
      timeout: REQUEST_TIMEOUT_MS,
    };
    const web = new bolt.webApi.WebClient(settings.botToken, { ...clientOptions, logger });
    const auth = await web.auth.test().catch((err: unknown) => {
      throw describeConnectError(err, 'botToken');
    });
    this.bot = {
      userId: auth.user_id ?? '',
      ...(auth.bot_id ? { botId: auth.bot_id } : {}),
      ...(auth.team_id ? { teamId: auth.team_id } : {}),
    };
    // Reconnecting is the ChannelManager's job (with backoff and /health showing it), so the SDK's own is off.
    const receiver = new bolt.SocketModeReceiver({
      appToken: settings.appToken,
      logger,
      autoReconnectEnabled: false,
      installerOptions: { clientOptions },
    });
    const app = new bolt.App({
      token: settings.botToken,
      botUserId: this.bot.userId,
      ...(this.bot.botId ? { botId: this.bot.botId } : {}),
      receiver,
      logger,
      clientOptions,
      tokenVerificationEnabled: false,
    });
    const connection: Connection = { app, receiver, web, closing: false, refreshing: false };
    this.route(connection, link);
    try {
      await withTimeout(app.start(), CONNECT_TIMEOUT_MS, 'the Socket Mode connection did not open');
    } catch (err) {
      connection.closing = true;
      await withTimeout(receiver.client.disconnect(), 5_000, '').catch(() => undefined);
      throw describeConnectError(err, 'appToken');
    }
    if (generation !== this.generation) {
      connection.closing = true;
      await withTimeout(receiver.client.disconnect(), 5_000, '').catch(() => undefined);
      throw new Error('slack was disconnected while connecting');
    }
    this.watch(connection, link);
    this.connection = connection;
    link.log.info(`connected as ${auth.user ?? this.bot.userId} in ${auth.team ?? 'the workspace'} (Socket Mode)`);
  }

  async disconnect(): Promise<void> {
    this.generation += 1;
    const connection = this.connection;
    this.connection = undefined;
    if (!connection) return;
    connection.closing = true;
    await withTimeout(connection.receiver.client.disconnect(), 5_000, '').catch(() => undefined);
  }

  async sendText(target: ReplyTarget, part: OutgoingPart, options?: SendOptions): Promise<string> {
    const web = this.requireWeb();
    const channel = await this.resolveChannel(target.chatId, web);
    const result = await web.chat
      .postMessage({
        channel,
        text: part.text,
        ...(target.threadId ? { thread_ts: target.threadId } : {}),
        ...(options?.buttons?.length ? { blocks: buttonBlocks(part.text, options.buttons) } : {}),
      })
      .catch((err: unknown) => {
        throw describeSlackError('chat.postMessage', err);
      });
    return String(result.ts);
  }

  async editText(target: ReplyTarget, messageId: string, part: OutgoingPart, options?: SendOptions): Promise<void> {
    const web = this.requireWeb();
    const channel = await this.resolveChannel(target.chatId, web);
    await web.chat
      .update({
        channel,
        ts: messageId,
        text: part.text,
        ...(options?.buttons?.length ? { blocks: buttonBlocks(part.text, options.buttons) } : {}),
      })
      .catch((err: unknown) => {
        throw describeSlackError('chat.update', err);
      });
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const web = this.requireWeb();
    const channel = await this.resolveChannel(target.chatId, web);
    const content = await readFile(file.path);
    const placement = target.threadId ? { channel_id: channel, thread_ts: target.threadId } : { channel_id: channel };
    await web
      .filesUploadV2({ ...placement, file: content, filename: file.name, title: file.name })
      .catch((err: unknown) => {
        throw describeSlackError('files.uploadV2', err);
      });
  }

  private requireWeb(): WebClient {
    if (!this.connection) throw new Error('slack is not connected');
    return this.connection.web;
  }

  /** Events, slash commands and button presses → the framework, one at a time. */
  private route(connection: Connection, link: PlatformLink): void {
    const { app } = connection;
    const enqueue = (what: string, task: () => Promise<void>) => {
      this.inbox = this.inbox
        .then(task)
        .catch((err: unknown) => link.log.warn(`handling a ${what} failed: ${errorMessage(err)}`));
    };
    const onMessage = async ({ event }: { event: unknown }) => {
      enqueue('message', () => this.onMessage(event as SlackMessageEvent, connection.web, link));
    };
    // A mention in a channel arrives twice (message + app_mention, same ts): the framework drops the second.
    app.event('message', onMessage);
    app.event('app_mention', onMessage);
    app.command(/^\/.+/, async ({ command, ack }) => {
      await ack();
      enqueue('slash command', async () => {
        const sender = await this.senderOf(command.user_id, connection.web);
        await link.receive({
          id: `command-${command.trigger_id}`,
          chatId: command.channel_id,
          sender,
          chatType: isDirect({ channel: command.channel_id }) ? 'direct' : 'group',
          text: `${command.command} ${command.text}`.trim(),
          mentioned: true,
        });
      });
    });
    app.action(new RegExp(`^${BUTTON_ACTION_PREFIX}`), async ({ ack, body, action }) => {
      await ack();
      const press = body as {
        user?: { id?: string };
        channel?: { id?: string };
        container?: { channel_id?: string; thread_ts?: string };
        message?: { thread_ts?: string };
      };
      const value = (action as { value?: string }).value;
      const chatId = press.channel?.id ?? press.container?.channel_id;
      const userId = press.user?.id;
      const actionTs = (action as { action_ts?: string }).action_ts ?? String(Date.now());
      if (!value || !chatId || !userId) return;
      const threadId = press.message?.thread_ts ?? press.container?.thread_ts;
      enqueue('button press', async () => {
        await link.receive({
          id: `button-${userId}-${actionTs}`,
          chatId,
          sender: await this.senderOf(userId, connection.web),
          chatType: isDirect({ channel: chatId }) ? 'direct' : 'group',
          text: value,
          mentioned: true,
          ...(threadId ? { threadId, sessionKey: `slack:${chatId}:${threadId}` } : {}),
        });
      });
    });
    app.error(async (err) => link.log.warn(`Slack event handling failed: ${errorMessage(err)}`));
  }

  private async onMessage(event: SlackMessageEvent, web: WebClient, link: PlatformLink): Promise<void> {
    if (!isUserMessage(event, this.bot)) return;
    const settings = this.options.settings();
    const direct = isDirect(event);
    if (direct && !settings.dm.enabled) return;
    const mentioned = direct || mentionsBot(event, this.bot);
    if (!direct && settings.groupPolicy === 'allowlist' && settings.groupRequireMention && !mentioned) return;
    const user = await this.userOf(event.user ?? '', web, link.log);
    const incoming = toIncoming(event, {
      bot: this.bot,
      replyInThread: settings.replyInThread,
      user,
      openFile: (file, signal) => downloadPrivateFile(file, settings.botToken, slackApiUrl(settings.apiBase), signal),
    });
    const addressed = mentioned || settings.groupPolicy !== 'mention';
    if (addressed) incoming.text = await this.withThreadContext(incoming, event, web, link.log);
    await link.receive(incoming);
  }

  /**
   * The first time the agent is addressed inside a thread someone else started, it gets the thread so far (it
   * would otherwise answer "this" without knowing what "this" is). Threads the bot opened itself need nothing.
   */
  private async withThreadContext(
    incoming: IncomingMessage,
    event: SlackMessageEvent,
    web: WebClient,
    log: Logger,
  ): Promise<string> {
    const settings = this.options.settings();
    const thread = threadOf(event, settings.replyInThread);
    if (!thread) return incoming.text;
    const key = `${incoming.chatId}:${thread}`;
    if (this.threadsKnown.seen(key) || thread === event.ts) return incoming.text;
    if (!settings.includeThreadContext || incoming.text.startsWith('/')) return incoming.text;
    try {
      const replies = await web.conversations.replies({
        channel: incoming.chatId,
        ts: thread,
        limit: settings.threadContextLimit + 1,
      });
      const lines = threadContextLines(replies.messages ?? [], this.bot, event.ts).slice(-settings.threadContextLimit);
      if (lines.length === 0) return incoming.text;
      return `[Slack thread so far]\n${lines.join('\n')}\n\n[Current message]\n${incoming.text}`;
    } catch (err) {
      log.debug(
        `thread context for ${key} unavailable: ${errorMessage(describeSlackError('conversations.replies', err))}`,
      );
      return incoming.text;
    }
  }

  private async senderOf(userId: string, web: WebClient): Promise<IncomingMessage['sender']> {
    const user = await this.userOf(userId, web, this.options.log);
    return {
      id: userId,
      ...(user.username ? { username: user.username } : {}),
      ...(user.name ? { name: user.name } : {}),
    };
  }

  /**
   * A user's handle (for `@name` entries in allowFrom) and name, from users.info, cached. People from other
   * workspaces (Slack Connect) get no handle: names are unique within one workspace only.
   */
  private async userOf(userId: string, web: WebClient, log: Logger): Promise<SlackUser> {
    const cached = this.users.get(userId);
    if (cached && cached.until > Date.now()) return cached.user;
    let user: SlackUser = {};
    let until = Date.now() + USER_CACHE_MS;
    try {
      const info = await web.users.info({ user: userId });
      const sameTeam = !info.user?.team_id || !this.bot.teamId || info.user.team_id === this.bot.teamId;
      const name = info.user?.real_name || info.user?.profile?.display_name || undefined;
      user = { ...(sameTeam && info.user?.name ? { username: info.user.name } : {}), ...(name ? { name } : {}) };
    } catch (err) {
      until = Date.now() + USER_FAILURE_CACHE_MS;
      const code = slackErrorCode(err) ?? 'error';
      if (!this.userLookupWarnings.has(code)) {
        this.userLookupWarnings.add(code);
        log.warn(
          `cannot look up Slack users (${errorMessage(describeSlackError('users.info', err))}); ` +
            'allowFrom entries must be user ids (U…) until the app has the users:read scope',
        );
      }
    }
    this.users.set(userId, { user, until });
    return user;
  }

  /** Conversation ids pass through; a user id (U…/W…, or `<@U…>`) means the DM with that user. */
  private async resolveChannel(chatId: string, web: WebClient): Promise<string> {
    const reference = /^<([@#])([A-Z0-9]+)(?:\|[^>]*)?>$/.exec(chatId.trim());
    const id = reference?.[2] ?? chatId.trim();
    if (!/^[UW][A-Z0-9]{2,}$/.test(id)) return id;
    const known = this.directChannels.get(id);
    if (known) return known;
    const opened = await web.conversations.open({ users: id }).catch((err: unknown) => {
      throw describeSlackError('conversations.open', err);
    });
    const channel = opened.channel?.id;
    if (!channel) throw new Error(`Slack opened no DM with ${id}`);
    this.directChannels.set(id, channel);
    return channel;
  }

  /** A closed connection: Slack's refresh notice → reconnect here at once; anything else → the framework. */
  private watch(connection: Connection, link: PlatformLink): void {
    const client = connection.receiver.client;
    client.on('ws_message', (data: unknown) => {
      if (typeof data === 'string' && data.includes('"disconnect"') && /"type"\s*:\s*"disconnect"/.test(data)) {
        connection.refreshing = true;
      }
    });
    client.on('disconnected', () => {
      if (connection.closing || this.connection !== connection) return;
      if (connection.refreshing) {
        connection.refreshing = false;
        link.log.info('Slack asked for a new Socket Mode connection; reconnecting');
        client.start().catch((err: unknown) => link.failed(describeConnectError(err, 'appToken')));
        return;
      }
      link.failed(new Error('the Slack Socket Mode connection closed'));
    });
  }
}

function withTimeout<T>(task: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
    timer.unref?.();
  });
  return Promise.race([task, timeout]).finally(() => clearTimeout(timer));
}
