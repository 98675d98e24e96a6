/**
 * One forward WebSocket to a OneBot v11 implementation (NapCat, LLOneBot, Lagrange, go-cqhttp…): we connect to its
 * server with `Authorization: Bearer <accessToken>`; it pushes events (message, notice, meta_event) and answers the
 * actions we send, each answer matched to its request by `echo`. Reconnecting is the ChannelManager's job: a closed
 * or silent socket is reported through `onClose`, once.
 */
import { randomUUID } from 'node:crypto';
import type { ClientOptions, WebSocket as WsSocket } from 'ws';
import { z } from 'zod';
import { errorMessage, UserError } from '../../util/errors.js';

export type WebSocketClass = new (url: string, options: ClientOptions) => WsSocket;

export const ACTION_TIMEOUT_MS = 20_000;
const CONNECT_TIMEOUT_MS = 15_000;
/** A ping every so often; a socket that answered nothing since the last one is dead (a NAT dropped it). */
const LIVENESS_INTERVAL_MS = 45_000;

const idLike = z.union([z.string(), z.number()]).transform(String);

/** The fields of an event the channel reads (the rest is ignored, as the spec allows). */
export const eventSchema = z.looseObject({
  post_type: z.string(),
  self_id: idLike.optional(),
  time: z.number().optional(),
  message_type: z.string().optional(),
  sub_type: z.string().optional(),
  message_id: idLike.optional(),
  user_id: idLike.optional(),
  group_id: idLike.optional(),
  message: z.unknown().optional(),
  raw_message: z.string().optional(),
  sender: z.looseObject({ nickname: z.string().optional(), card: z.string().optional() }).optional(),
  notice_type: z.string().optional(),
  meta_event_type: z.string().optional(),
});
export type OneBotEvent = z.infer<typeof eventSchema>;

const responseSchema = z.looseObject({
  echo: z.unknown(),
  status: z.string().optional(),
  retcode: z.number().optional(),
  data: z.unknown().optional(),
  message: z.string().optional(),
  wording: z.string().optional(),
});

/** An action the implementation answered with a failure (retcode ≠ 0): 1404 means it does not have that action. */
export class ActionFailed extends Error {
  constructor(
    readonly action: string,
    readonly retcode: number | undefined,
    detail: string,
  ) {
    super(`OneBot action ${action} failed (retcode ${retcode ?? '?'}${detail ? `: ${detail}` : ''})`);
  }
}

interface Pending {
  action: string;
  resolve(data: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export interface OneBotSocketOptions {
  WebSocket: WebSocketClass;
  url: string;
  accessToken: string;
  onEvent(event: OneBotEvent): void;
  /** The socket closed or went silent after `open` resolved (not called after `close()`). */
  onClose(error: Error): void;
}

export class OneBotSocket {
  private socket?: WsSocket;
  private readonly pending = new Map<string, Pending>();
  private closed = false;
  private heardSincePing = true;
  private liveness?: NodeJS.Timeout;

  constructor(private readonly options: OneBotSocketOptions) {}

  /** Opens the socket; a refused token is a UserError (not retried), anything else a plain Error (retried). */
  open(): Promise<void> {
    const { accessToken } = this.options;
    const url = this.options.url;
    const shown = url.split('?')[0] ?? url;
    const headers: Record<string, string> = accessToken ? { Authorization: `Bearer ${accessToken}` } : {};
    const socket = new this.options.WebSocket(url, {
      headers,
      handshakeTimeout: CONNECT_TIMEOUT_MS,
      followRedirects: false,
      maxPayload: 64 * 1024 * 1024,
    });
    this.socket = socket;
    return new Promise<void>((resolve, reject) => {
      let opened = false;
      socket.on('unexpected-response', (_request, response) => {
        const status = response.statusCode ?? 0;
        response.resume();
        socket.terminate();
        reject(
          status === 401 || status === 403
            ? new UserError(
                `The OneBot server at ${shown} refused channels.napcat.accessToken (HTTP ${status}).`,
                'Put the token of NapCat’s WebSocket server (its "token" setting) in channels.napcat.accessToken.',
              )
            : new Error(`the OneBot server at ${shown} answered HTTP ${status} instead of opening a WebSocket`),
        );
      });
      socket.on('open', () => {
        opened = true;
        this.startLiveness(socket);
        resolve();
      });
      socket.on('message', (raw) => {
        this.heardSincePing = true;
        this.onFrame(String(raw));
      });
      socket.on('pong', () => {
        this.heardSincePing = true;
      });
      socket.on('error', (err) => {
        if (!opened) reject(new Error(`cannot connect to the OneBot server at ${shown}: ${errorMessage(err)}`));
      });
      socket.on('close', (code) => {
        if (!opened) reject(new Error(`the OneBot server at ${shown} closed the connection (code ${code})`));
        this.ended(new Error(`lost the connection to the OneBot server (code ${code})`));
      });
    });
  }

  /** Sends an action and resolves to its `data`; rejects on a failure answer, a timeout or a lost connection. */
  call(action: string, params: Record<string, unknown>, timeoutMs = ACTION_TIMEOUT_MS): Promise<unknown> {
    const socket = this.socket;
    if (!socket || this.closed || socket.readyState !== 1) {
      return Promise.reject(new Error('not connected to the OneBot server'));
    }
    const echo = randomUUID();
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(echo);
        reject(new Error(`OneBot action ${action} got no answer in ${timeoutMs / 1000} s`));
      }, timeoutMs);
      timer.unref?.();
      this.pending.set(echo, { action, resolve, reject, timer });
      socket.send(JSON.stringify({ action, params, echo }), (err) => {
        if (!err) return;
        this.settle(echo)?.reject(new Error(`sending ${action} failed: ${errorMessage(err)}`));
      });
    });
  }

  /** Closes for good: pending actions fail, onClose is not called. */
  close(): void {
    this.closed = true;
    this.stopLiveness();
    this.failPending(new Error('the OneBot connection was closed'));
    const socket = this.socket;
    if (socket && socket.readyState <= 1) socket.terminate();
  }

  private onFrame(raw: string): void {
    let frame: unknown;
    try {
      frame = JSON.parse(raw);
    } catch {
      return;
    }
    if (typeof frame !== 'object' || frame === null) return;
    if ('post_type' in frame) {
      const event = eventSchema.safeParse(frame);
      if (event.success) this.options.onEvent(event.data);
      return;
    }
    const response = responseSchema.safeParse(frame);
    if (!response.success || typeof response.data.echo !== 'string') return;
    const waiter = this.settle(response.data.echo);
    if (!waiter) return;
    const { status, retcode, data, wording, message } = response.data;
    if ((status !== undefined && status !== 'ok' && status !== 'async') || (retcode !== undefined && retcode !== 0)) {
      waiter.reject(new ActionFailed(waiter.action, retcode, wording || message || ''));
    } else waiter.resolve(data);
  }

  private settle(echo: string): Pending | undefined {
    const waiter = this.pending.get(echo);
    if (!waiter) return undefined;
    this.pending.delete(echo);
    clearTimeout(waiter.timer);
    return waiter;
  }

  private failPending(err: Error): void {
    for (const [echo, waiter] of this.pending) {
      clearTimeout(waiter.timer);
      waiter.reject(err);
      this.pending.delete(echo);
    }
  }

  private ended(err: Error): void {
    this.stopLiveness();
    this.failPending(err);
    if (this.closed) return;
    this.closed = true;
    this.options.onClose(err);
  }

  private startLiveness(socket: WsSocket): void {
    this.liveness = setInterval(() => {
      if (!this.heardSincePing) {
        socket.terminate();
        this.ended(new Error('the OneBot server stopped answering (no frame or pong for a while)'));
        return;
      }
      this.heardSincePing = false;
      socket.ping();
    }, LIVENESS_INTERVAL_MS);
    this.liveness.unref?.();
  }

  private stopLiveness(): void {
    if (this.liveness) clearInterval(this.liveness);
    this.liveness = undefined;
  }
}
