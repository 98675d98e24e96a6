/**
 * One connection to the QQ bot gateway (a WebSocket): op 10 Hello → op 2 Identify, or op 6 Resume when a session
 * is known → op 0 READY / RESUMED → op 1 heartbeats carrying the last `s`, answered by op 11. Dispatches (op 0)
 * after that go to `onDispatch` with their sequence number. The session (id and last seq) outlives the connection,
 * so after a drop the next connection resumes and QQ replays what was missed; op 9 (invalid session) and the close
 * codes that mean the same start a fresh one.
 */
import type { WebSocket as WsSocket } from 'ws';
import { z } from 'zod';

export type WebSocketClass = new (url: string) => WsSocket;

/** C2C messages and group @-messages to the bot (QQ's GROUP_AND_C2C_EVENT). */
export const INTENT_GROUP_AND_C2C = 1 << 25;

const frameSchema = z.looseObject({
  op: z.number(),
  d: z.unknown().optional(),
  s: z.number().nullish(),
  t: z.string().nullish(),
});
const helloSchema = z.looseObject({ heartbeat_interval: z.number().positive() });
const readySchema = z.looseObject({
  session_id: z.string().min(1),
  user: z.looseObject({ id: z.string().optional(), username: z.string().optional() }).optional(),
});

const READY_TIMEOUT_MS = 30_000;
/** Close codes after which the session cannot be resumed (QQ: invalid session / seq, session timed out). */
const SESSION_GONE = new Set([4006, 4007, 4009]);
/** Close codes that are a setup problem, not a network one: retried slowly, with the reason in the log. */
const FATAL: Record<number, string> = {
  4004: 'QQ refused the access token (close 4004)',
  4013: 'QQ refused the intents (close 4013): the bot lacks permission for C2C or group messages',
  4014: 'QQ refused the intents (close 4014): the bot lacks permission for C2C or group messages',
  4914: 'the bot is offline or only allowed in the sandbox (close 4914): use channels.qq.sandbox or publish it',
  4915: 'the bot is banned (close 4915)',
};

export interface Session {
  id?: string;
  seq: number | null;
}

export interface GatewayOptions {
  WebSocket: WebSocketClass;
  url: string;
  /** `QQBot <access token>`. */
  authorization: string;
  intents: number;
  session: Session;
  onDispatch(type: string, data: unknown): void;
  /** The connection ended after `open` resolved; `retryAfterMs` when QQ asked for a reconnect. */
  onClose(error: Error, retryAfterMs?: number): void;
}

export interface Ready {
  resumed: boolean;
  botName?: string;
}

export class QqGateway {
  private socket?: WsSocket;
  private heartbeat?: NodeJS.Timeout;
  private acked = true;
  private opened = false;
  private closed = false;
  private onReady?: () => void;

  constructor(private readonly options: GatewayOptions) {}

  /** Resolves on READY or RESUMED; rejects when the gateway closes or refuses first. */
  open(): Promise<Ready> {
    const { options } = this;
    return new Promise<Ready>((resolve, reject) => {
      this.onReady = () => clearTimeout(readyTimer);
      const socket = new options.WebSocket(options.url);
      this.socket = socket;
      // A gateway that accepts the connection but never gets to READY must not hold the connect forever.
      const readyTimer = setTimeout(() => end(new Error('QQ gateway did not get ready within 30 s')), READY_TIMEOUT_MS);
      readyTimer.unref();
      const end = (error: Error, retryAfterMs?: number) => {
        clearTimeout(readyTimer);
        if (this.closed) {
          if (!this.opened) reject(error);
          return;
        }
        this.closed = true;
        this.stopHeartbeat();
        socket.terminate();
        if (this.opened) options.onClose(error, retryAfterMs);
        else reject(error);
      };
      socket.on('error', (err) => end(new Error(`QQ gateway connection failed: ${err.message}`)));
      socket.on('close', (code, reason) => {
        if (SESSION_GONE.has(code)) this.forgetSession();
        const text =
          FATAL[code] ?? `QQ gateway closed the connection (code ${code}${reason.length ? `: ${reason}` : ''})`;
        end(new Error(text), FATAL[code] ? 30_000 : undefined);
      });
      socket.on('message', (raw) => {
        if (this.closed) return;
        let frame: z.infer<typeof frameSchema>;
        try {
          frame = frameSchema.parse(JSON.parse(String(raw)));
        } catch {
          return; // not a gateway frame: nothing QQ sends; ignored rather than ending the session
        }
        switch (frame.op) {
          case 10: {
            const hello = helloSchema.safeParse(frame.d);
            this.startHeartbeat(hello.success ? hello.data.heartbeat_interval : 41_250, end);
            const { session } = options;
            if (session.id) {
              this.send({ op: 6, d: { token: options.authorization, session_id: session.id, seq: session.seq ?? 0 } });
            } else {
              this.send({
                op: 2,
                d: { token: options.authorization, intents: options.intents, shard: [0, 1], properties: {} },
              });
            }
            return;
          }
          case 11:
            this.acked = true;
            return;
          case 1:
            this.send({ op: 1, d: options.session.seq });
            return;
          case 7:
            end(new Error('QQ asked the bot to reconnect (op 7)'), 0);
            return;
          case 9:
            // d true: the session may be resumed; false (usual): start over with a fresh Identify.
            if (frame.d !== true) this.forgetSession();
            end(new Error('QQ said the session is no longer valid (op 9); connecting with a fresh session'), 0);
            return;
          case 0:
            this.dispatch(frame, resolve, end);
            return;
          default:
            return;
        }
      });
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopHeartbeat();
    this.socket?.close(1000);
    // A peer that never answers the close frame must not hold the socket open.
    const socket = this.socket;
    setTimeout(() => socket?.terminate(), 2_000).unref();
  }

  private dispatch(
    frame: z.infer<typeof frameSchema>,
    resolve: (ready: Ready) => void,
    end: (error: Error) => void,
  ): void {
    const { session } = this.options;
    if (frame.t === 'READY') {
      const ready = readySchema.safeParse(frame.d);
      if (!ready.success) {
        end(new Error('QQ gateway sent a READY without a session id'));
        return;
      }
      session.id = ready.data.session_id;
      if (typeof frame.s === 'number') session.seq = frame.s;
      this.opened = true;
      this.onReady?.();
      resolve({ resumed: false, ...(ready.data.user?.username ? { botName: ready.data.user.username } : {}) });
      return;
    }
    if (frame.t === 'RESUMED') {
      this.opened = true;
      this.onReady?.();
      resolve({ resumed: true });
      return;
    }
    // Replayed events come before RESUMED: they count too (this connection is the session's now).
    if (!session.id || !frame.t) return;
    if (typeof frame.s === 'number') {
      // An already-seen sequence number is a replay we have handled: not delivered twice.
      if (session.seq !== null && frame.s <= session.seq) return;
      session.seq = frame.s;
    }
    this.options.onDispatch(frame.t, frame.d);
  }

  private forgetSession(): void {
    this.options.session.id = undefined;
    this.options.session.seq = null;
  }

  private startHeartbeat(intervalMs: number, end: (error: Error) => void): void {
    this.stopHeartbeat();
    this.acked = true;
    this.heartbeat = setInterval(() => {
      if (!this.acked) {
        end(new Error('QQ gateway stopped answering heartbeats'));
        return;
      }
      this.acked = false;
      this.send({ op: 1, d: this.options.session.seq });
    }, intervalMs);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  private send(frame: unknown): void {
    if (this.socket?.readyState === 1) this.socket.send(JSON.stringify(frame));
  }
}
