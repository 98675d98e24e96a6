/**
 * ChatChannel: a Channel made from a platform adapter plus the behaviour every chat platform shares.
 *
 * Inbound (`receive`): drop redeliveries (same chat + message id) → access (allowFrom, pairing codes for strangers
 * in direct chats, groupPolicy in groups) → only owners may run /pairing → download attachments → transcribe voice
 * notes and audio (`[transcription: …]` in the text, the audio still attached) → publish.
 * Outbound (`send`): progress filtering (tool hints, reasoning) → Markdown rendered in the platform's markup and
 * split under its limit → streaming by edits where the platform can → files → the reply spoken as a voice note
 * (`tts.when`) where the platform has them. While the connection is down, sends wait for it to come back instead
 * of failing.
 */
import { rm } from 'node:fs/promises';
import { basename } from 'node:path';
import { parseCommand } from '../agent/commands/router.js';
import type { MessageBus } from '../bus/message-bus.js';
import type { InboundMessage, OutboundMessage } from '../bus/types.js';
import type { VoiceService } from '../providers/voice.js';
import { errorMessage } from '../util/errors.js';
import { type Logger, silentLogger } from '../util/log.js';
import { admitsChat, type ChatAdmission, decideAccess, isOwner, SeenChats } from './access.js';
import type { Channel, ChannelCapabilities, ChannelEvents, ChannelStatus } from './channel.js';
import { RecentIds } from './dedup.js';
import { renderMarkdown } from './markup/render.js';
import { splitMarkdown } from './markup/split.js';
import { AttachmentTooLarge, kindOfPath, saveAttachment } from './media.js';
import { META } from './metadata.js';
import { type PairingStore, pairingReply } from './pairing.js';
import type {
  ChatPlatform,
  CommandInfo,
  IncomingMessage,
  OutgoingPart,
  PlatformLink,
  ReplyTarget,
  SendOptions,
} from './platform.js';
import type { ChannelSettings, DeliverySwitches } from './settings.js';
import { MessageStream } from './streaming.js';
import { TypingIndicator } from './typing.js';

export interface ChatChannelOptions<S extends ChannelSettings = ChannelSettings> {
  name: string;
  platform: ChatPlatform;
  /** Current `channels.<name>` settings (a function: a config reload changes them). */
  settings: () => S;
  /** `channels.sendProgress / sendToolHints / showReasoning`, before per-channel overrides. */
  switches?: () => DeliverySwitches;
  pairing: PairingStore;
  /** Where attachments from users are saved (`<dataDir>/media/<name>`). */
  mediaDir: string;
  /** The agent's slash commands (for platforms with a command menu). */
  commands?: () => readonly CommandInfo[];
  log?: Logger;
  /** How long a reply waits for a lost connection to return before it fails (and the router retries). */
  reconnectWaitMs?: number;
  /** Speech-to-text for incoming audio and spoken replies (`transcription`, `tts`); none: audio stays a file. */
  voice?: VoiceService;
}

const PAIRING_REPLY_INTERVAL_MS = 60_000;

export class ChatChannel<S extends ChannelSettings = ChannelSettings> implements Channel {
  readonly name: string;
  private readonly platform: ChatPlatform;
  private readonly log: Logger;
  private bus?: MessageBus;
  private events?: ChannelEvents;
  private state: ChannelStatus = 'stopped';
  /** Bumped by every start and stop: a connect that finishes after a stop is undone. */
  private attempts = 0;
  private connectedWaiters: (() => void)[] = [];
  private readonly recent = new RecentIds(2000);
  private readonly streams = new Map<string, MessageStream>();
  private readonly typing: TypingIndicator;
  private readonly pairingReplies = new Map<string, number>();
  private readonly seen = new SeenChats();

  constructor(private readonly options: ChatChannelOptions<S>) {
    this.name = options.name;
    this.platform = options.platform;
    this.log = options.log ?? silentLogger;
    this.typing = new TypingIndicator((target) => this.platform.sendTyping?.(target) ?? Promise.resolve());
  }

  get capabilities(): ChannelCapabilities {
    return this.platform.capabilities;
  }

  status(): ChannelStatus {
    return this.state;
  }

  async start(bus: MessageBus, events?: ChannelEvents): Promise<void> {
    this.bus = bus;
    this.events = events;
    this.state = 'starting';
    const link: PlatformLink = {
      receive: (message) => this.receive(message),
      failed: (error, retryAfterMs) => this.connectionLost(error, retryAfterMs),
      commands: () => this.options.commands?.() ?? [],
      log: prefixedLogger(this.log, `${this.name}: `),
    };
    const attempt = ++this.attempts;
    try {
      await this.platform.connect(link);
    } catch (err) {
      if (attempt === this.attempts) this.state = 'error';
      throw err;
    }
    if (attempt !== this.attempts) {
      // Stopped (the manager gave up on this start at its deadline) while connecting: do not leave it connected.
      if (this.status() === 'stopped') await this.platform.disconnect();
      throw new Error(`${this.name}: stopped while connecting`);
    }
    this.state = 'running';
    for (const resolve of this.connectedWaiters.splice(0)) resolve();
  }

  async stop(): Promise<void> {
    this.attempts += 1;
    this.state = 'stopped';
    this.typing.stopAll();
    // Streams are kept (only their pending edits stop): a reply whose end arrives after the reconnect finishes the
    // message it started instead of posting the whole reply a second time.
    for (const stream of this.streams.values()) stream.cancel();
    await this.platform.disconnect();
  }

  private connectionLost(error: Error, retryAfterMs?: number): void {
    if (this.state !== 'running') return;
    this.state = 'reconnecting';
    this.events?.failed(error, retryAfterMs);
  }

  // ── inbound ──────────────────────────────────────────────────────────────────────────────────────────────

  /** One message from the platform (the PlatformLink's `receive`). */
  async receive(message: IncomingMessage): Promise<void> {
    if (this.recent.seen(`${message.chatId}:${message.id}`)) {
      this.log.debug(`${this.name}: ignored a redelivered message ${message.id} in ${message.chatId}`);
      return;
    }
    const settings = this.options.settings();
    const decision = decideAccess(
      settings,
      { sender: message.sender, chatId: message.chatId, chatType: message.chatType, mentioned: message.mentioned },
      (senderId) => this.options.pairing.isApproved(this.name, senderId),
    );
    if (decision.action === 'pair') return this.offerPairing(message);
    if (decision.action === 'ignore') {
      this.log.debug(`${this.name}: ignored a message in ${message.chatId}: ${decision.reason}`);
      return;
    }
    this.seen.add(message.chatId, message.sender, message.chatType);
    const target = targetOf(message.chatId, message.threadId);
    if (parseCommand(message.text)?.name === '/pairing' && !isOwner(settings, message.sender)) {
      await this.sendMarkdown(target, `Only the owner (named in channels.${this.name}.allowFrom) can manage pairing.`);
      return;
    }
    const { media, notes, audio } = await this.download(message, settings.maxMediaMb);
    if (!message.text.trim() && notes.length === 0 && media.length === 0) return;
    this.acknowledge(message);
    this.typing.start(message.chatId, target);
    const voiceIn = await this.transcribe(message, audio, notes);
    const content = [message.text.trim(), ...notes].filter(Boolean).join('\n');
    const wantsStream = settings.streaming && this.capabilities.editMessages && this.platform.editText !== undefined;
    const inbound: InboundMessage = {
      channel: this.name,
      senderId: message.sender.id,
      chatId: message.chatId,
      content,
      ...(media.length ? { media } : {}),
      ...(message.sessionKey ? { sessionKey: message.sessionKey } : {}),
      metadata: {
        ...message.metadata,
        [META.messageId]: message.id,
        ...(message.threadId ? { [META.threadId]: message.threadId } : {}),
        ...(message.sender.username ? { username: message.sender.username } : {}),
        is_group: message.chatType === 'group',
        ...(wantsStream ? { [META.wantsStream]: true } : {}),
        ...(voiceIn ? { [META.voiceIn]: true } : {}),
      },
      timestamp: new Date().toISOString(),
    };
    this.bus?.publishInbound(inbound);
  }

  /** The platform's "received" mark, if it has one: it never holds up the turn, and a failure only goes to the log. */
  private acknowledge(message: IncomingMessage): void {
    this.platform
      .acknowledge?.(message)
      .catch((err: unknown) =>
        this.log.debug(`${this.name}: could not acknowledge ${message.id}: ${errorMessage(err)}`),
      );
  }

  watchSetup(changed: () => void): () => void {
    return this.platform.watchSetup?.(changed) ?? (() => {});
  }

  admitsChat(chatId: string): ChatAdmission {
    const directWith = this.platform.directChatWith?.(chatId);
    return admitsChat(
      this.options.settings(),
      chatId,
      { ...(directWith ? { directWith } : {}), seen: this.seen.of(chatId) },
      (senderId) => this.options.pairing.isApproved(this.name, senderId),
    );
  }

  private async offerPairing(message: IncomingMessage): Promise<void> {
    const { code, created } = await this.options.pairing.requestCode(this.name, message.sender, message.chatId);
    const last = this.pairingReplies.get(message.sender.id) ?? 0;
    // A stranger who keeps writing is reminded once a minute, not answered every time.
    if (!created && Date.now() - last < PAIRING_REPLY_INTERVAL_MS) return;
    this.pairingReplies.set(message.sender.id, Date.now());
    this.log.info(`${this.name}: sent a pairing code to ${message.sender.id} (approve: /pairing approve ${code})`);
    await this.sendMarkdown(targetOf(message.chatId, message.threadId), pairingReply(code));
  }

  private async download(
    message: IncomingMessage,
    maxMediaMb: number,
  ): Promise<{ media: string[]; notes: string[]; audio: string[] }> {
    const media: string[] = [];
    const notes: string[] = [];
    const audio: string[] = [];
    for (const attachment of message.attachments ?? []) {
      try {
        const path = await saveAttachment(attachment, this.options.mediaDir, maxMediaMb * 1024 * 1024);
        media.push(path);
        if (attachment.kind === 'audio' || kindOfPath(path) === 'audio') audio.push(path);
      } catch (err) {
        const why = err instanceof AttachmentTooLarge ? `too large: ${err.message}` : errorMessage(err);
        this.log.warn(`${this.name}: could not save a ${attachment.kind} from ${message.chatId}: ${why}`);
        notes.push(`[${attachment.kind} ${attachment.name ?? ''} not received: ${why}]`.replace('  ', ' '));
      }
    }
    return { media, notes, audio };
  }

  /**
   * Every saved voice note / audio file transcribed, before the turn: `[transcription: …]` goes into `notes` (a
   * failure is named there too, so the model knows the audio was not heard). True when one was transcribed.
   */
  private async transcribe(message: IncomingMessage, audio: string[], notes: string[]): Promise<boolean> {
    const voice = this.options.voice;
    if (!voice || audio.length === 0 || !voice.transcriptionReady()) return false;
    let heard = false;
    for (const path of audio) {
      const result = await voice.transcribeFile(path);
      if (result.ok && result.text) {
        heard = true;
        notes.push(`[transcription: ${result.text}]`);
      } else {
        const why = result.ok ? 'no speech recognised' : result.error;
        this.log.warn(`${this.name}: could not transcribe audio from ${message.chatId}: ${why}`);
        notes.push(`[audio ${basename(path)} not transcribed: ${why}]`);
      }
    }
    return heard;
  }

  // ── outbound ─────────────────────────────────────────────────────────────────────────────────────────────

  async send(message: OutboundMessage): Promise<void> {
    const meta = message.metadata ?? {};
    if (meta[META.progress] && !this.wantsProgress(meta)) return;
    await this.whenConnected();
    const target = targetOf(message.chatId, stringOf(meta[META.threadId]));
    const streamKey = `${message.chatId}:${stringOf(meta[META.streamId]) ?? ''}`;
    if (meta[META.streamDelta]) {
      this.typing.stop(message.chatId);
      this.streamFor(streamKey, this.withQuote(target, meta)).append(message.content);
      return;
    }
    if (meta[META.streamEnd]) {
      await this.endStream(streamKey);
      return;
    }
    if (!meta[META.progress]) this.typing.stop(message.chatId);
    for (const path of message.media ?? []) await this.sendFile(target, path);
    const buttons = message.buttons?.length ? message.buttons : undefined;
    const text = buttons && !this.capabilities.buttons ? appendButtonLabels(message.content, buttons) : message.content;
    const options: SendOptions | undefined = buttons && this.capabilities.buttons ? { buttons } : undefined;
    const stream = this.streams.get(streamKey);
    if (stream && meta[META.streamId] !== undefined) {
      await this.finishStream(streamKey, stream, text, options);
    } else {
      const markdown = meta[META.progress] ? progressMarkdown(message.content, meta) : text;
      await this.sendMarkdown(this.withQuote(target, meta), markdown, options);
    }
    if (!meta[META.progress]) await this.speak(target, message.content, meta);
  }

  /**
   * The reply again as a voice note (`tts.when`), after its text, where the platform has voice notes. A failure
   * only goes to the log: the text is already there.
   */
  private async speak(target: ReplyTarget, content: string, meta: Record<string, unknown>): Promise<void> {
    const voice = this.options.voice;
    if (!voice || !this.platform.sendVoice || !content.trim() || meta[META.renderAs] === 'text') return;
    if (!voice.speaks(meta[META.voiceIn] === true)) return;
    const spoken = await voice.speak(content);
    if (!spoken.ok) {
      this.log.warn(`${this.name}: could not speak the reply to ${target.chatId}: ${spoken.error}`);
      return;
    }
    try {
      await this.platform.sendVoice(target, { path: spoken.path, name: basename(spoken.path), kind: 'audio' });
    } catch (err) {
      this.log.warn(`${this.name}: sending a voice note to ${target.chatId} failed: ${errorMessage(err)}`);
    } finally {
      await rm(spoken.path, { force: true });
    }
  }

  private wantsProgress(meta: Record<string, unknown>): boolean {
    const global = this.options.switches?.() ?? { sendProgress: true, sendToolHints: true, showReasoning: true };
    const settings = this.options.settings();
    if (meta[META.toolHint]) return settings.sendToolHints ?? global.sendToolHints;
    if (meta[META.reasoning]) return settings.showReasoning ?? global.showReasoning;
    return settings.sendProgress ?? global.sendProgress;
  }

  /** Resolves when connected; waits (bounded) while the manager reconnects, so nothing sent meanwhile is lost. */
  private whenConnected(): Promise<void> {
    if (this.state === 'running') return Promise.resolve();
    const waitMs = this.options.reconnectWaitMs ?? 60_000;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.connectedWaiters = this.connectedWaiters.filter((w) => w !== done);
        reject(new Error(`${this.name} is not connected (${this.state})`));
      }, waitMs);
      timer.unref?.();
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.connectedWaiters.push(done);
    });
  }

  private streamFor(key: string, target: ReplyTarget): MessageStream {
    let stream = this.streams.get(key);
    if (!stream) {
      stream = new MessageStream({
        platform: this.platform,
        target,
        render: (markdown) => this.render(markdown),
        intervalMs: this.options.settings().streamEditInterval * 1000,
        log: this.log,
      });
      this.streams.set(key, stream);
    }
    return stream;
  }

  private async endStream(key: string): Promise<void> {
    const stream = this.streams.get(key);
    if (stream) await this.finishStream(key, stream);
  }

  /**
   * A final write that fails (the connection dropped mid-request) keeps the stream, so the router's retry finishes
   * the same message instead of sending the reply a second time.
   */
  private async finishStream(key: string, stream: MessageStream, text?: string, options?: SendOptions): Promise<void> {
    this.streams.delete(key);
    try {
      await stream.finish(text, options);
    } catch (err) {
      if (!this.streams.has(key)) this.streams.set(key, stream);
      throw err;
    }
  }

  /** Markdown → parts in the platform's markup, each within its limit. */
  render(markdown: string): OutgoingPart[] {
    const { markup, maxMessageLength } = this.capabilities;
    const toMarkup = (md: string) => renderMarkdown(md, markup);
    return splitMarkdown(markdown, maxMessageLength, toMarkup)
      .map((md) => ({ markdown: md, text: toMarkup(md) }))
      .filter((part) => part.text.trim() !== '');
  }

  private async sendMarkdown(target: ReplyTarget, markdown: string, options?: SendOptions): Promise<void> {
    const parts = this.render(markdown);
    for (const [i, part] of parts.entries()) {
      const last = i === parts.length - 1;
      await this.platform.sendText(
        i === 0 ? target : { ...target, replyTo: undefined },
        part,
        last ? options : undefined,
      );
    }
  }

  private async sendFile(target: ReplyTarget, path: string): Promise<void> {
    const name = basename(path);
    if (!this.capabilities.media || !this.platform.sendFile) {
      await this.sendMarkdown(target, `(${name} was not sent: ${this.name} cannot carry files)`);
      return;
    }
    try {
      await this.platform.sendFile(target, { path, name, kind: kindOfPath(path) });
    } catch (err) {
      this.log.warn(`${this.name}: sending ${path} to ${target.chatId} failed: ${errorMessage(err)}`);
      await this.sendMarkdown(target, `(could not send ${name})`);
    }
  }

  private withQuote(target: ReplyTarget, meta: Record<string, unknown>): ReplyTarget {
    const quoted = stringOf(meta[META.messageId]);
    return this.options.settings().replyToMessage && quoted ? { ...target, replyTo: quoted } : target;
  }
}

/** A logger whose lines start with `prefix` (a platform's own messages name their channel). */
export function prefixedLogger(log: Logger, prefix: string): Logger {
  return {
    debug: (m) => log.debug(prefix + m),
    info: (m) => log.info(prefix + m),
    warn: (m) => log.warn(prefix + m),
    error: (m) => log.error(prefix + m),
  };
}

function targetOf(chatId: string, threadId: string | undefined): ReplyTarget {
  return threadId ? { chatId, threadId } : { chatId };
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}

/** Tool hints as code, reasoning as a quote: visibly apart from the answer. */
function progressMarkdown(content: string, meta: Record<string, unknown>): string {
  if (meta[META.toolHint]) return `\`${content.replace(/`/g, "'")}\``;
  if (meta[META.reasoning]) return content.replace(/^/gm, '> ');
  return content;
}

function appendButtonLabels(content: string, buttons: string[][]): string {
  return `${content}\n\n${buttons.map((row) => row.map((label) => `[${label}]`).join(' ')).join('\n')}`;
}
