/**
 * Telegram through grammy: long polling (our own getUpdates loop with a watchdog) or a webhook; HTML replies up to
 * 4096 characters; streaming by editMessageText; photos, documents, audio and video both ways, spoken replies as
 * voice notes (sendVoice); the agent's slash
 * commands in the bot's menu (setMyCommands). A 409 Conflict (another program polls the same bot) is reported
 * once, clearly, and retried after 30 s instead of in a tight loop.
 */
import type { Message, Update } from '@grammyjs/types';
import type { ApiClientOptions, Bot } from 'grammy';
import { errorMessage, UserError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import { renderMarkdown } from '../markup/render.js';
import type {
  ChatPlatform,
  CommandInfo,
  OutgoingFile,
  OutgoingPart,
  PlatformLink,
  ReplyTarget,
  SendOptions,
} from '../platform.js';
import { apiRoot, type TelegramSettings } from './index.js';
import { type BotIdentity, toIncoming } from './updates.js';
import { startWebhookServer, type WebhookServer } from './webhook.js';

type Grammy = typeof import('grammy');
type ApiFetch = NonNullable<ApiClientOptions['fetch']>;
/** grammy types signals with its AbortController polyfill; native signals work the same. */
type GrammySignal = NonNullable<Parameters<Bot['api']['getFile']>[1]>;
const forGrammy = (signal: AbortSignal) => signal as unknown as GrammySignal;

export const CONFLICT_RETRY_MS = 30_000;
const UNAUTHORIZED_RETRY_MS = 300_000;
const WATCHDOG_GRACE_MS = 15_000;
const ALLOWED_UPDATES = ['message', 'callback_query'] as const;
const MAX_RATE_LIMIT_WAIT_S = 30;

export interface TelegramPlatformOptions {
  grammy: Grammy;
  settings: () => TelegramSettings;
  log: Logger;
  /** How long past the poll timeout a getUpdates call may stay silent before it counts as stalled. */
  watchdogGraceMs?: number;
}

export class TelegramPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: 4096,
    markup: 'telegram-html',
    editMessages: true,
    media: true,
    threads: true,
    buttons: true,
  };
  private bot?: Bot;
  /** Next update to ask for; kept across reconnects so nothing is fetched twice or skipped. */
  private offset = 0;
  private polling?: { controller: AbortController; done: Promise<void> };
  private webhook?: WebhookServer;
  private fetchImpl: typeof fetch = fetch;
  private connecting?: AbortController;

  constructor(private readonly options: TelegramPlatformOptions) {}

  async connect(link: PlatformLink): Promise<void> {
    const settings = this.options.settings();
    const root = apiRoot(settings.apiBase);
    this.fetchImpl = settings.proxy ? await proxiedFetch(settings.proxy) : fetch;
    const bot = new this.options.grammy.Bot(settings.token, {
      client: {
        apiRoot: root,
        ...(settings.proxy ? { fetch: this.fetchImpl as unknown as ApiFetch } : {}),
      },
    });
    // grammy retries getMe for ever while the network is down: disconnect (the manager's start deadline) ends it.
    const connecting = new AbortController();
    this.connecting = connecting;
    try {
      await bot.init(forGrammy(connecting.signal));
    } catch (err) {
      if (connecting.signal.aborted) throw new Error('Telegram: stopped while connecting (getMe)');
      if (isGrammyError(err) && err.error_code === 401) {
        throw new UserError(
          'Telegram rejected channels.telegram.token (401 Unauthorized).',
          'Copy the token again from @BotFather; /revoke there issues a new one.',
        );
      }
      throw err;
    } finally {
      if (this.connecting === connecting) this.connecting = undefined;
    }
    const identity = { id: bot.botInfo.id, username: bot.botInfo.username };
    this.bot = bot;
    this.route(bot, identity, link, root, settings.token);
    await this.registerCommands(bot, link.commands(), link.log);
    if (settings.mode === 'webhook') await this.startWebhook(bot, settings, link.log);
    else {
      await bot.api.deleteWebhook({ drop_pending_updates: false });
      const controller = new AbortController();
      this.polling = { controller, done: this.poll(bot, link, controller.signal) };
    }
    link.log.info(`connected as @${identity.username} (${settings.mode})`);
  }

  async disconnect(): Promise<void> {
    this.connecting?.abort();
    const { polling, webhook, bot } = this;
    this.polling = undefined;
    this.webhook = undefined;
    if (polling) {
      polling.controller.abort();
      await polling.done;
      // Confirms what was handled, so a restarted gateway is not sent the last batch again.
      await bot?.api
        .getUpdates({ offset: this.offset, limit: 1, timeout: 0 }, forGrammy(AbortSignal.timeout(2_000)))
        .catch(() => undefined);
    }
    await webhook?.close();
  }

  async sendText(target: ReplyTarget, part: OutgoingPart, options?: SendOptions): Promise<string> {
    const bot = this.requireBot();
    const other = { ...placement(target), ...keyboard(options) };
    const sent = await this.withFallbacks(
      () => bot.api.sendMessage(target.chatId, part.text, { ...other, parse_mode: 'HTML' }),
      () => bot.api.sendMessage(target.chatId, plainText(part), other),
    );
    return String(sent.message_id);
  }

  async editText(target: ReplyTarget, messageId: string, part: OutgoingPart, options?: SendOptions): Promise<void> {
    const bot = this.requireBot();
    const id = Number(messageId);
    const other = keyboard(options);
    try {
      await this.withFallbacks(
        () => bot.api.editMessageText(target.chatId, id, part.text, { ...other, parse_mode: 'HTML' }),
        () => bot.api.editMessageText(target.chatId, id, plainText(part), other),
      );
    } catch (err) {
      if (isGrammyError(err) && /message is not modified/i.test(err.description)) return;
      throw err;
    }
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const bot = this.requireBot();
    const input = () => new this.options.grammy.InputFile(file.path, file.name);
    const other = placement(target);
    const asDocument = () => bot.api.sendDocument(target.chatId, input(), other);
    if (file.kind === 'image') {
      // Photos over 10 MB or with odd dimensions are refused as photos but go through as documents.
      await bot.api.sendPhoto(target.chatId, input(), other).catch((err: unknown) => {
        if (isGrammyError(err) && err.error_code === 400) return asDocument();
        throw err;
      });
    } else if (file.kind === 'audio') await bot.api.sendAudio(target.chatId, input(), other);
    else if (file.kind === 'video') await bot.api.sendVideo(target.chatId, input(), other);
    else await asDocument();
  }

  /** A spoken reply as a voice note (Telegram plays OGG/Opus, MP3 and M4A as voice; others go as audio). */
  async sendVoice(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const bot = this.requireBot();
    const input = new this.options.grammy.InputFile(file.path, file.name);
    if (/\.(ogg|oga|opus|mp3|m4a)$/i.test(file.name)) await bot.api.sendVoice(target.chatId, input, placement(target));
    else await bot.api.sendAudio(target.chatId, input, placement(target));
  }

  /** A private chat's id is its user's id (a positive number; groups are negative). */
  directChatWith(chatId: string): { id: string } | undefined {
    return /^[1-9][0-9]{0,15}$/.test(chatId) ? { id: chatId } : undefined;
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    await this.bot?.api.sendChatAction(target.chatId, 'typing', placement(target));
  }

  private requireBot(): Bot {
    if (!this.bot) throw new Error('telegram is not connected');
    return this.bot;
  }

  /** Messages and button presses go to the framework; the order of updates is kept. */
  private route(bot: Bot, identity: BotIdentity, link: PlatformLink, root: string, token: string): void {
    const openFile = async (fileId: string, signal: AbortSignal) => {
      const file = await bot.api.getFile(fileId, forGrammy(signal));
      if (!file.file_path)
        throw new Error('Telegram gave no file path (files over 20 MB cannot be downloaded by bots)');
      const response = await this.fetchImpl(`${root}/file/bot${token}/${file.file_path}`, { signal });
      if (!response.ok || !response.body) throw new Error(`file download answered HTTP ${response.status}`);
      return response.body as AsyncIterable<Uint8Array>;
    };
    bot.on('message', async (ctx) => {
      const incoming = toIncoming(ctx.message as Message, identity, openFile, link.commands());
      if (incoming) await link.receive(incoming);
    });
    bot.on('callback_query:data', async (ctx) => {
      await ctx.answerCallbackQuery().catch(() => undefined);
      const query = ctx.callbackQuery;
      const chat = query.message?.chat;
      if (!chat) return;
      await link.receive({
        id: `button-${query.id}`,
        chatId: String(chat.id),
        sender: { id: String(query.from.id), ...(query.from.username ? { username: query.from.username } : {}) },
        chatType: chat.type === 'private' ? 'direct' : 'group',
        text: query.data,
        mentioned: true,
      });
    });
    bot.catch((err) => link.log.warn(`handling an update failed: ${errorMessage(err.error)}`));
  }

  private async registerCommands(bot: Bot, commands: readonly CommandInfo[], log: Logger): Promise<void> {
    const menu = commands
      .map((c) => ({ command: c.name.replace(/-/g, '_').toLowerCase(), description: c.description.slice(0, 256) }))
      .filter((c) => /^[a-z0-9_]{1,32}$/.test(c.command) && c.description.length >= 1)
      .slice(0, 100);
    if (menu.length === 0) return;
    try {
      await bot.api.setMyCommands(menu);
    } catch (err) {
      log.warn(`could not register the command menu: ${errorMessage(err)}`);
    }
  }

  /**
   * Long polling. A getUpdates call that neither answers nor fails within its timeout + 15 s is a stalled connection
   * (a dead NAT mapping, a hung proxy): the watchdog aborts it and the manager reconnects.
   */
  private async poll(bot: Bot, link: PlatformLink, stop: AbortSignal): Promise<void> {
    const timeout = this.options.settings().pollTimeout;
    const limitMs = timeout * 1000 + (this.options.watchdogGraceMs ?? WATCHDOG_GRACE_MS);
    while (!stop.aborted) {
      const watchdog = AbortSignal.timeout(limitMs);
      let updates: Update[];
      try {
        updates = await bot.api.getUpdates(
          { offset: this.offset, timeout, allowed_updates: [...ALLOWED_UPDATES] },
          forGrammy(AbortSignal.any([stop, watchdog])),
        );
      } catch (err) {
        if (stop.aborted) return;
        if (watchdog.aborted) {
          link.failed(new Error(`long polling stalled: getUpdates gave no answer in ${limitMs / 1000} s`));
          return;
        }
        const { error, retryAfterMs } = describePollingError(err);
        link.failed(error, retryAfterMs);
        return;
      }
      for (const update of updates) {
        if (stop.aborted) return;
        this.offset = update.update_id + 1;
        await bot.handleUpdate(update).catch((err: unknown) => link.log.warn(`update failed: ${errorMessage(err)}`));
      }
    }
  }

  private async startWebhook(bot: Bot, settings: TelegramSettings, log: Logger): Promise<void> {
    this.webhook = await startWebhookServer({
      host: settings.webhookListenHost,
      port: settings.webhookListenPort,
      path: settings.webhookPath,
      secret: settings.webhookSecretToken,
      onUpdate: (update) => bot.handleUpdate(update),
      log,
    });
    try {
      await bot.api.setWebhook(settings.webhookUrl, {
        secret_token: settings.webhookSecretToken,
        max_connections: settings.webhookMaxConnections,
        allowed_updates: [...ALLOWED_UPDATES],
        drop_pending_updates: false,
      });
    } catch (err) {
      await this.webhook.close();
      this.webhook = undefined;
      throw err;
    }
    log.info(`webhook listening on ${settings.webhookListenHost}:${this.webhook.port}${settings.webhookPath}`);
  }

  /** Markup Telegram refuses is re-sent as plain text; a short flood wait is waited out once. */
  private async withFallbacks<T>(html: () => Promise<T>, plain: () => Promise<T>): Promise<T> {
    const attempt = async (send: () => Promise<T>): Promise<T> => {
      try {
        return await send();
      } catch (err) {
        const wait = isGrammyError(err) && err.error_code === 429 ? err.parameters.retry_after : undefined;
        if (wait === undefined || wait > MAX_RATE_LIMIT_WAIT_S) throw err;
        await new Promise((resolve) => setTimeout(resolve, wait * 1000));
        return send();
      }
    };
    try {
      return await attempt(html);
    } catch (err) {
      if (!isGrammyError(err) || !/can't parse entities|unsupported start tag|can't find end/i.test(err.description))
        throw err;
      this.options.log.warn(`Telegram refused the HTML (${err.description}); sending plain text`);
      return attempt(plain);
    }
  }
}

interface GrammyErrorLike {
  error_code: number;
  description: string;
  parameters: { retry_after?: number };
}

function isGrammyError(err: unknown): err is GrammyErrorLike {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as GrammyErrorLike).error_code === 'number' &&
    typeof (err as GrammyErrorLike).description === 'string'
  );
}

function describePollingError(err: unknown): { error: Error; retryAfterMs?: number } {
  if (isGrammyError(err)) {
    if (err.error_code === 409) {
      return {
        error: new Error(
          'Telegram answered 409 Conflict: another program is already receiving updates for this bot token ' +
            '(a second gateway, or another bot using the same token). Stop it; retrying every 30 s.',
        ),
        retryAfterMs: CONFLICT_RETRY_MS,
      };
    }
    if (err.error_code === 401) {
      return {
        error: new Error('Telegram rejected the bot token (401 Unauthorized); check channels.telegram.token'),
        retryAfterMs: UNAUTHORIZED_RETRY_MS,
      };
    }
    const retryAfter = err.parameters.retry_after;
    return {
      error: new Error(`getUpdates failed: ${err.description}`),
      ...(retryAfter ? { retryAfterMs: retryAfter * 1000 } : {}),
    };
  }
  return { error: new Error(`cannot reach Telegram: ${errorMessage(err)}`) };
}

function placement(target: ReplyTarget) {
  return {
    ...(target.threadId ? { message_thread_id: Number(target.threadId) } : {}),
    ...(target.replyTo
      ? { reply_parameters: { message_id: Number(target.replyTo), allow_sending_without_reply: true } }
      : {}),
  };
}

/** Buttons as an inline keyboard: a press comes back as a message with the label as its text. */
function keyboard(options: SendOptions | undefined) {
  if (!options?.buttons?.length) return {};
  return {
    reply_markup: {
      inline_keyboard: options.buttons.map((row) =>
        row.map((label) => ({ text: label, callback_data: Buffer.from(label).subarray(0, 64).toString('utf8') })),
      ),
    },
  };
}

function plainText(part: OutgoingPart): string {
  return renderMarkdown(part.markdown, 'plain').slice(0, 4096);
}

/** fetch through an HTTP(S) proxy (undici's ProxyAgent), for grammy and file downloads. */
async function proxiedFetch(proxy: string): Promise<typeof fetch> {
  const { fetch: undiciFetch, ProxyAgent } = await import('undici');
  const dispatcher = new ProxyAgent(proxy);
  return ((input: string | URL, init?: Record<string, unknown>) => {
    // grammy passes node-fetch options (agent, compress) and its own AbortSignal polyfill: keep what undici knows.
    const { agent: _agent, compress: _compress, signal, ...rest } = init ?? {};
    const controller = new AbortController();
    const source = signal as { aborted?: boolean; addEventListener?: (type: 'abort', fn: () => void) => void };
    if (source?.aborted) controller.abort();
    else source?.addEventListener?.('abort', () => controller.abort());
    return undiciFetch(input, { ...rest, signal: controller.signal, dispatcher } as Parameters<typeof undiciFetch>[1]);
  }) as unknown as typeof fetch;
}
