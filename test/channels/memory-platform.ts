/**
 * An in-memory ChatPlatform for framework tests: `deliver` plays a user writing, `chat(id)` is what a chat shows
 * (edits applied), and connects, sends or edits can be made to fail.
 */
import { BASIC_CAPABILITIES, type ChannelCapabilities } from '../../src/channels/channel.js';
import type {
  ChatPlatform,
  IncomingMessage,
  OutgoingFile,
  OutgoingPart,
  PlatformLink,
  ReplyTarget,
  SendOptions,
} from '../../src/channels/platform.js';

export interface ShownMessage {
  id: string;
  text: string;
  target: ReplyTarget;
  edits: number;
  buttons?: string[][];
}

export class MemoryPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities;
  readonly messages: ShownMessage[] = [];
  readonly files: { target: ReplyTarget; file: OutgoingFile }[] = [];
  connects = 0;
  typing = 0;
  /** Makes the next connects reject with these errors. */
  connectFailures: Error[] = [];
  /** Makes the next connects wait for these (a platform that does not answer). */
  connectGates: Promise<void>[] = [];
  disconnects = 0;
  link?: PlatformLink;
  /** Set by a test: the person a direct chat id names (as Telegram's user ids do). */
  directChatWith?: (chatId: string) => { id: string; username?: string } | undefined;
  /** Set by a test: the platform's "received" mark (a reaction). */
  acknowledge?: (message: IncomingMessage) => Promise<void>;
  /** Who watches the setup while the manager waits to reconnect (`watchSetup`); a test calls it as a login would. */
  setupWatchers = new Set<() => void>();
  private nextId = 1;

  constructor(capabilities: Partial<ChannelCapabilities> = {}) {
    this.capabilities = { ...BASIC_CAPABILITIES, markup: 'markdown', ...capabilities };
  }

  async connect(link: PlatformLink): Promise<void> {
    this.connects += 1;
    await this.connectGates.shift();
    const failure = this.connectFailures.shift();
    if (failure) throw failure;
    this.link = link;
  }

  watchSetup(changed: () => void): () => void {
    this.setupWatchers.add(changed);
    return () => this.setupWatchers.delete(changed);
  }

  async disconnect(): Promise<void> {
    this.disconnects += 1;
    this.link = undefined;
  }

  async sendText(target: ReplyTarget, part: OutgoingPart, options?: SendOptions): Promise<string> {
    const id = String(this.nextId++);
    this.messages.push({
      id,
      text: part.text,
      target,
      edits: 0,
      ...(options?.buttons ? { buttons: options.buttons } : {}),
    });
    return id;
  }

  async editText(_target: ReplyTarget, messageId: string, part: OutgoingPart, options?: SendOptions): Promise<void> {
    const message = this.messages.find((m) => m.id === messageId);
    if (!message) throw new Error(`no message ${messageId}`);
    message.text = part.text;
    message.edits += 1;
    if (options?.buttons) message.buttons = options.buttons;
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    this.files.push({ target, file });
  }

  async sendTyping(): Promise<void> {
    this.typing += 1;
  }

  /** A user writes (through the framework's inbound pipeline). */
  async deliver(message: Partial<IncomingMessage> & { text: string }): Promise<void> {
    if (!this.link) throw new Error('not connected');
    await this.link.receive({
      id: String(this.nextId++),
      chatId: '1',
      sender: { id: '1', username: 'owner' },
      chatType: 'direct',
      ...message,
    });
  }

  chat(chatId: string): string[] {
    return this.messages.filter((m) => m.target.chatId === chatId).map((m) => m.text);
  }
}
