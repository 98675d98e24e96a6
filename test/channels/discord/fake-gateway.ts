/**
 * The gateway half of the fake Discord: one WebSocket per client connection, speaking Discord's protocol as
 * discord.js expects it (op10 HELLO → op2 IDENTIFY → READY + GUILD_CREATE; op1 heartbeats answered with op11;
 * op6 RESUME replays the session's missed events and ends with RESUMED, an unknown session gets op9).
 *
 * Like Discord, events are kept per session while its connection is gone: a resumed session gets them, a new
 * session (IDENTIFY) does not.
 */
import type { WebSocket } from 'ws';

export interface GatewayFrame {
  op: number;
  d: unknown;
  s: number | null;
  t: string | null;
}

interface Session {
  id: string;
  seq: number;
  events: GatewayFrame[];
  connection?: WebSocket;
}

export interface GatewayOptions {
  token: string;
  /** Answered to IDENTIFY. */
  readyPayload(sessionId: string): unknown;
  /** Dispatched right after READY (the guilds, with their channels). */
  guildCreates(): unknown[];
  /** IDENTIFY asking for any of these intent bits is closed with 4014 (privileged intent not enabled). */
  refusedIntents?: number;
  heartbeatIntervalMs?: number;
}

export class FakeGateway {
  private session?: Session;
  private readonly connections = new Set<WebSocket>();
  private nextSession = 1;
  readonly identifies: { intents: number }[] = [];
  readonly resumes: { sessionId: string; seq: number }[] = [];

  constructor(private readonly options: GatewayOptions) {}

  accept(ws: WebSocket): void {
    this.connections.add(ws);
    ws.on('close', () => {
      this.connections.delete(ws);
      if (this.session?.connection === ws) this.session.connection = undefined;
    });
    ws.on('message', (raw) => {
      let frame: { op?: number; d?: Record<string, unknown> };
      try {
        frame = JSON.parse(String(raw)) as typeof frame;
      } catch {
        ws.close(4002, 'Decode error');
        return;
      }
      this.onFrame(ws, frame.op ?? -1, frame.d ?? {});
    });
    send(ws, { op: 10, d: { heartbeat_interval: this.options.heartbeatIntervalMs ?? 45_000 }, s: null, t: null });
  }

  /** Sends an event to the current session (kept for a resume while it has no connection). */
  dispatch(t: string, d: unknown): void {
    const session = this.session;
    if (!session) return;
    session.seq += 1;
    const frame = { op: 0, d, s: session.seq, t };
    session.events.push(frame);
    if (session.events.length > 1000) session.events.shift();
    if (session.connection) send(session.connection, frame);
  }

  /** True while a session has a live connection. */
  get connected(): boolean {
    return this.session?.connection !== undefined;
  }

  /** Cuts every connection without a close frame (the client sees 1006). */
  terminateAll(): void {
    for (const ws of this.connections) ws.terminate();
  }

  /** Closes the current connection with a close code (4000: unknown error, which clients resume after). */
  close(code: number): void {
    this.session?.connection?.close(code, 'fake gateway closed the connection');
  }

  /** op7: Discord asks the client to reconnect and resume. */
  requestReconnect(): void {
    const connection = this.session?.connection;
    if (connection) send(connection, { op: 7, d: null, s: null, t: null });
  }

  private onFrame(ws: WebSocket, op: number, d: Record<string, unknown>): void {
    switch (op) {
      case 1:
        send(ws, { op: 11, d: null, s: null, t: null });
        return;
      case 2: {
        if (d.token !== this.options.token) {
          ws.close(4004, 'Authentication failed.');
          return;
        }
        const intents = Number(d.intents ?? 0);
        this.identifies.push({ intents });
        if ((intents & (this.options.refusedIntents ?? 0)) !== 0) {
          ws.close(4014, 'Disallowed intent(s).');
          return;
        }
        const session: Session = { id: `session-${this.nextSession++}`, seq: 0, events: [], connection: ws };
        this.session = session;
        this.dispatch('READY', this.options.readyPayload(session.id));
        for (const guild of this.options.guildCreates()) this.dispatch('GUILD_CREATE', guild);
        return;
      }
      case 6: {
        const seq = Number(d.seq ?? 0);
        this.resumes.push({ sessionId: String(d.session_id), seq });
        const session = this.session;
        if (d.token !== this.options.token || !session || session.id !== d.session_id) {
          send(ws, { op: 9, d: false, s: null, t: null });
          return;
        }
        session.connection = ws;
        for (const frame of session.events) if ((frame.s ?? 0) > seq) send(ws, frame);
        this.dispatch('RESUMED', null);
        return;
      }
      default:
        return;
    }
  }
}

function send(ws: WebSocket, frame: GatewayFrame): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
}
