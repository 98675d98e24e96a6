/**
 * The Socket.IO connection to MoChat (socket.io-client): the claw token in the handshake's `auth`, websocket
 * transport only, msgpack packets unless socketDisableMsgpack. Reconnecting is the framework's job (a lost socket
 * fails the channel, which connects again and resubscribes from the saved cursors), so the client's own is off.
 */
import type { ManagerOptions, Socket, SocketOptions } from 'socket.io-client';
import { errorMessage } from '../../util/errors.js';
import { isObject, type Json } from './events.js';
import type { SocketIoParser, SocketIoSdk } from './index.js';

/** The pushes upstream listens to. */
export const PUSHED_EVENTS = [
  'claw.session.events',
  'claw.panel.events',
  'notify:chat.inbox.append',
  'notify:chat.message.add',
  'notify:chat.message.update',
  'notify:chat.message.recall',
  'notify:chat.message.delete',
] as const;
export type PushedEvent = (typeof PUSHED_EVENTS)[number];

export interface SocketOpenOptions {
  sdk: SocketIoSdk;
  parser: SocketIoParser | undefined;
  url: string;
  path: string;
  token: string;
  timeoutMs: number;
  onPush(event: PushedEvent, payload: unknown): void;
  /** The connection ended without `close()`. */
  onLost(reason: string): void;
}

const ACK_TIMEOUT_MS = 10_000;

export class MochatSocket {
  private closed = false;

  private constructor(private readonly socket: Socket) {}

  /** Connects; rejects when the server refuses or does not answer within `timeoutMs`. */
  static open(options: SocketOpenOptions): Promise<MochatSocket> {
    const settings: Partial<ManagerOptions & SocketOptions> = {
      path: `/${options.path.trim().replace(/^\/+/, '') || 'socket.io'}`,
      transports: ['websocket'],
      auth: { token: options.token },
      reconnection: false,
      forceNew: true,
      timeout: Math.max(1000, options.timeoutMs),
      ...(options.parser ? { parser: options.parser } : {}),
    };
    const socket = options.sdk.io(options.url, settings);
    const wrapper = new MochatSocket(socket);
    for (const event of PUSHED_EVENTS) socket.on(event, (payload: unknown) => options.onPush(event, payload));
    return new Promise<MochatSocket>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error('MoChat socket did not connect in time')), settings.timeout);
      const fail = (err: Error) => {
        clearTimeout(timer);
        wrapper.close();
        reject(err);
      };
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.off('connect_error');
        socket.on('disconnect', (reason: string) => {
          if (!wrapper.closed) options.onLost(`MoChat socket disconnected (${reason})`);
        });
        resolve(wrapper);
      });
      socket.once('connect_error', (err: Error) => fail(new Error(`MoChat socket: ${errorMessage(err)}`)));
    });
  }

  get connected(): boolean {
    return !this.closed && this.socket.connected;
  }

  /** Emits with an acknowledgement; the answer as an object (`{result, data, message}`), `{result: false}` on failure. */
  async call(event: string, payload: Json): Promise<Json> {
    if (!this.connected) return { result: false, message: 'socket not connected' };
    try {
      const raw: unknown = await this.socket.timeout(ACK_TIMEOUT_MS).emitWithAck(event, payload);
      return isObject(raw) ? raw : { result: true, data: raw };
    } catch (err) {
      return { result: false, message: errorMessage(err) };
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.removeAllListeners();
    this.socket.disconnect();
  }
}
