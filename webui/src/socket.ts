/**
 * The WebSocket to the gateway: reconnects with backoff, re-attaches the chats it follows, queues while down. Each
 * connection asks `url()` for its address: a fresh bootstrap, since a WebSocket token opens one connection.
 */
import type { ClientEnvelope, ServerFrame } from '../../src/channels/websocket/frames.js';

export type ConnectionState = 'connecting' | 'open' | 'closed';

export interface SocketEvents {
  frame(frame: ServerFrame): void;
  state(state: ConnectionState): void;
  /** Connected again after a drop: chats were re-attached, their histories may have moved on. */
  reconnected(): void;
}

export class ChatSocket {
  private ws?: WebSocket;
  private readonly followed = new Set<string>();
  private readonly queue: ClientEnvelope[] = [];
  private attempts = 0;
  private timer?: ReturnType<typeof setTimeout>;
  private closed = false;
  private everOpened = false;

  constructor(
    private readonly url: () => Promise<string>,
    private readonly events: SocketEvents,
  ) {
    void this.connect();
  }

  send(envelope: ClientEnvelope): void {
    if (envelope.type === 'attach' || envelope.type === 'message') this.followed.add(envelope.chat_id);
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(envelope));
    else this.queue.push(envelope);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.ws?.close();
  }

  private async connect(): Promise<void> {
    this.events.state('connecting');
    let url: string;
    try {
      url = await this.url();
    } catch {
      this.retry();
      return;
    }
    if (this.closed) return;
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onopen = () => {
      this.attempts = 0;
      const again = this.everOpened;
      this.everOpened = true;
      this.events.state('open');
      for (const chatId of this.followed) ws.send(JSON.stringify({ type: 'attach', chat_id: chatId }));
      for (const envelope of this.queue.splice(0)) ws.send(JSON.stringify(envelope));
      if (again) this.events.reconnected();
    };
    ws.onmessage = (event) => {
      try {
        this.events.frame(JSON.parse(String(event.data)) as ServerFrame);
      } catch {
        // Not JSON: not from our server; ignore.
      }
    };
    ws.onclose = () => this.retry();
  }

  private retry(): void {
    if (this.closed) return;
    this.events.state('closed');
    const delay = Math.min(15_000, 500 * 2 ** this.attempts);
    this.attempts += 1;
    this.timer = setTimeout(() => void this.connect(), delay);
  }
}
