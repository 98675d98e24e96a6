/**
 * What @mattermost/client's WebSocketClient needs from its surroundings, given to it on Node.
 *
 * It is written for browsers: it reads `WebSocket.OPEN` and builds `CloseEvent`s from the global scope. Node 22 has
 * both built in (they are undici's); Node 20 has neither, so there the same undici classes are installed, which makes
 * Node 20 look like Node 22 and changes nothing where they already exist.
 *
 * It also prints every connect, close and error (the whole event) with console.log. Its handlers run synchronously,
 * so while one runs console.log/console.warn are pointed at our logger's debug level (nanobot's own logger writes to
 * stderr, not through console): the gateway's output stays ours, and the lines are there with `--verbose`.
 */
import { format } from 'node:util';
import { CloseEvent, WebSocket } from 'undici';
import type { Logger } from '../../util/log.js';

export function provideWebSocketGlobals(): void {
  const scope = globalThis as unknown as Record<string, unknown>;
  scope.WebSocket ??= WebSocket;
  scope.CloseEvent ??= CloseEvent;
}

/** Runs `task` with the SDK's console lines sent to `log.debug`. */
export function quietly<T>(log: Logger, task: () => T): T {
  const saved = { log: console.log, warn: console.warn };
  const toDebug = (...parts: unknown[]) => log.debug(`mattermost sdk: ${format(...parts).slice(0, 500)}`);
  console.log = toDebug;
  console.warn = toDebug;
  try {
    return task();
  } finally {
    console.log = saved.log;
    console.warn = saved.warn;
  }
}

type Handler = ((event: Event) => void) | null;

/** An undici WebSocket whose handlers (set by the SDK) run `quietly`; what the SDK uses of a socket, nothing more. */
export class QuietSocket {
  private readonly socket: WebSocket;

  constructor(
    url: string,
    private readonly log: Logger,
  ) {
    this.socket = new WebSocket(url);
  }

  get readyState(): number {
    return this.socket.readyState;
  }

  send(data: string): void {
    this.socket.send(data);
  }

  close(code?: number): void {
    this.socket.close(code);
  }

  set onopen(handler: Handler) {
    this.socket.onopen = this.wrap(handler);
  }

  set onclose(handler: Handler) {
    this.socket.onclose = this.wrap(handler);
  }

  set onerror(handler: Handler) {
    this.socket.onerror = this.wrap(handler);
  }

  set onmessage(handler: Handler) {
    this.socket.onmessage = this.wrap(handler);
  }

  private wrap(handler: Handler): ((event: Event) => void) | null {
    if (!handler) return null;
    return (event: Event) => quietly(this.log, () => handler(event));
  }
}
