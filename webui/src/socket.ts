/**
 * The WebSocket to the gateway: reconnects with backoff, re-attaches the chats it follows, queues while down. Each
 * connection asks `url()` for its address: a fresh bootstrap, since a WebSocket token opens one connection.
 */
import type { ClientEnvelope, ServerFrame } from '../../src/channels/websocket/frames.js';
import { translate as t } from './i18n/core.js';

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

  private readonly pending = new Map<string, { resolve(value: unknown): void; reject(error: Error): void }>();
  private requests = 0;

  /** A `webui_request` (chat management); resolves with its result, rejects with the server's message. */
  request(action: string, payload: Record<string, unknown>): Promise<unknown> {
    const requestId = `req-${Date.now().toString(36)}-${++this.requests}`;
    return new Promise((resolve, reject) => {
      this.pending.set(requestId, { resolve, reject });
      this.send({ type: 'webui_request', request_id: requestId, action, payload });
    });
  }

  private readonly transcriptions = new Map<string, { resolve(text: string): void; reject(error: Error): void }>();

  /** Voice input: nanobot's `transcribe_audio`; resolves with the text, rejects with the server's detail code. */
  transcribe(dataUrl: string, durationMs: number): Promise<string> {
    const requestId = `voice-${Date.now().toString(36)}-${++this.requests}`;
    return new Promise((resolve, reject) => {
      this.transcriptions.set(requestId, { resolve, reject });
      this.send({ type: 'transcribe_audio', request_id: requestId, data_url: dataUrl, duration_ms: durationMs });
    });
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
      let frame: ServerFrame;
      try {
        frame = JSON.parse(String(event.data)) as ServerFrame;
      } catch {
        return; // Not JSON: not from our server; ignore.
      }
      if (frame.event === 'webui_response') {
        const waiting = this.pending.get(frame.request_id);
        this.pending.delete(frame.request_id);
        if (frame.ok) waiting?.resolve(frame.result);
        else waiting?.reject(new Error(frame.error.message));
        return;
      }
      if (frame.event === 'transcription_result' || frame.event === 'transcription_error') {
        const waiting = frame.request_id ? this.transcriptions.get(frame.request_id) : undefined;
        if (frame.request_id) this.transcriptions.delete(frame.request_id);
        if (frame.event === 'transcription_result') waiting?.resolve(frame.text);
        else waiting?.reject(new Error(frame.detail));
        return;
      }
      this.events.frame(frame);
    };
    ws.onclose = () => {
      // A request sent on this connection gets no answer now; the caller can try again.
      for (const waiting of this.pending.values()) waiting.reject(new Error(t('app.connectionDropped')));
      this.pending.clear();
      for (const waiting of this.transcriptions.values()) waiting.reject(new Error('connection'));
      this.transcriptions.clear();
      this.retry();
    };
  }

  private retry(): void {
    if (this.closed) return;
    this.events.state('closed');
    const delay = Math.min(15_000, 500 * 2 ** this.attempts);
    this.attempts += 1;
    this.timer = setTimeout(() => void this.connect(), delay);
  }
}
