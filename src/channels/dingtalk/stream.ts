/**
 * One Stream Mode connection, held by the SDK's DWClient: it opens the WebSocket, answers DingTalk's SYSTEM pings,
 * keeps the connection alive with WebSocket pings (a silent connection is cut), and hands CALLBACK frames of the
 * robot topic to us; we ACK each one once it is handled, so a frame that was never ACKed is redelivered on the next
 * connection (and dropped there as a duplicate if it had been handled after all).
 *
 * The registration (connections/open) goes through our fetch rather than the SDK's, which has DingTalk's address
 * built in: the body is the SDK's (clientId, clientSecret, subscriptions, ua), the address is `apiBase`. The SDK's own
 * reconnect is off: a lost connection is reported to the framework, which connects again with a fresh ticket. The
 * SDK writes a few lines with console.*; they go to our debug log, and a frame it cannot parse is logged, not thrown.
 */
import { format } from 'node:util';
import { checkSecureUrl } from '../../security/hosts.js';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { DingtalkApi } from './api.js';
import type { DingtalkSdk } from './index.js';

const OPEN_TIMEOUT_MS = 15_000;
/** How long a connection DingTalk asked us to leave may still carry ACKs. */
const DISCONNECT_GRACE_MS = 10_000;
const UA = 'nanobot-ts';

/** A CALLBACK frame as the SDK hands it over. */
export interface CallbackFrame {
  headers: { messageId?: string; topic?: string };
  data: string;
}

interface SocketLike {
  emit(event: string | symbol, ...args: unknown[]): boolean;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  terminate(): void;
}

/** What we read of the SDK client besides its typed API (its socket and endpoint are private there). */
interface ClientInternals {
  socket?: SocketLike;
  dw_url?: string;
  config: { autoReconnect?: boolean; subscriptions: { type: string; topic: string }[] };
}

export interface StreamConnectionOptions {
  sdk: DingtalkSdk;
  api: DingtalkApi;
  clientId: string;
  clientSecret: string;
  log: Logger;
  onCallback(frame: CallbackFrame, connection: StreamConnection): void;
  /** The connection ended (closed by DingTalk or the network, or DingTalk asked us to reconnect); not after `close()`. */
  onLost(error: Error): void;
}

export class StreamConnection {
  private readonly client: InstanceType<DingtalkSdk['DWClient']>;
  private closed = false;
  private lostReported = false;

  constructor(private readonly options: StreamConnectionOptions) {
    const { sdk } = options;
    this.client = quietly(
      options.log,
      () =>
        new sdk.DWClient({ clientId: options.clientId, clientSecret: options.clientSecret, keepAlive: true, ua: UA }),
    );
    const internals = this.internals();
    internals.config.autoReconnect = false;
    // Only the robot's messages: no catch-all EVENT subscription.
    internals.config.subscriptions = [];
    this.client.registerCallbackListener(sdk.TOPIC_ROBOT, (frame) => options.onCallback(frame, this));
  }

  /** Registers and opens the WebSocket; resolves once it is open. */
  async open(): Promise<void> {
    const { endpoint, ticket } = await this.options.api.openConnection(this.internals().config.subscriptions, UA);
    checkEndpoint(endpoint);
    if (this.closed) throw new Error('the DingTalk connection was closed while opening');
    const url = new URL(endpoint);
    url.searchParams.set('ticket', ticket);
    this.internals().dw_url = url.href;
    const opened = this.client._connect();
    const socket = this.internals().socket;
    if (socket) this.watch(socket);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        socket?.terminate();
        reject(new Error(`the DingTalk Stream endpoint did not open within ${OPEN_TIMEOUT_MS / 1000}s`));
      }, OPEN_TIMEOUT_MS);
    });
    try {
      await Promise.race([opened, timeout]);
    } catch (err) {
      this.close();
      throw new Error(`cannot open the DingTalk Stream connection: ${errorMessage(err)}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Lost or closed already (a connection that ends while `open` resolves must not be taken as connected). */
  get ended(): boolean {
    return this.closed || this.lostReported;
  }

  /** Tells DingTalk this frame is handled (it is not redelivered). A closed connection drops the ACK. */
  ack(messageId: string): void {
    if (this.closed) return;
    try {
      this.client.socketCallBackResponse(messageId, { success: true });
    } catch (err) {
      this.options.log.debug(`could not ACK ${messageId}: ${errorMessage(err)}`);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    quietly(this.options.log, () => this.client.disconnect());
  }

  private internals(): ClientInternals {
    return this.client as unknown as ClientInternals;
  }

  /** Runs the SDK's socket handlers quietly and safely, and notices the end of the connection. */
  private watch(socket: SocketLike): void {
    const emit = socket.emit.bind(socket);
    const log = this.options.log;
    socket.emit = (event, ...args) =>
      quietly(log, () => {
        try {
          return emit(event, ...args);
        } catch (err) {
          log.warn(`ignored a Stream frame the SDK could not handle: ${errorMessage(err)}`);
          return true;
        }
      });
    socket.on('message', (raw) => {
      if (!isDisconnectFrame(raw)) return;
      // A new connection is opened at once; this one stays for the ACKs still on their way until DingTalk closes it.
      this.lost(new Error('DingTalk asked for a new Stream connection'));
      setTimeout(() => this.close(), DISCONNECT_GRACE_MS).unref();
    });
    socket.on('close', () => {
      const wasClosed = this.closed;
      this.close();
      if (!wasClosed) this.lost(new Error('the DingTalk Stream connection closed'));
    });
  }

  private lost(error: Error): void {
    if (this.lostReported) return;
    this.lostReported = true;
    this.options.onLost(error);
  }
}

function isDisconnectFrame(raw: unknown): boolean {
  try {
    const frame = JSON.parse(String(raw)) as { type?: unknown; headers?: { topic?: unknown } };
    return frame.type === 'SYSTEM' && frame.headers?.topic === 'disconnect';
  } catch {
    return false;
  }
}

/** The WebSocket endpoint DingTalk names: wss, or plain ws only to this machine (a test's fake). */
function checkEndpoint(endpoint: string): void {
  const checked = checkSecureUrl(endpoint.replace(/^ws(s?):/i, 'http$1:'));
  if (/^wss?:\/\//i.test(endpoint) && !('error' in checked)) return;
  throw new Error('DingTalk named a Stream endpoint that is not a wss:// URL');
}

/** Runs `task` with the SDK's console lines sent to `log.debug` (its handlers run synchronously). */
function quietly<T>(log: Logger, task: () => T): T {
  const saved = { info: console.info, warn: console.warn, error: console.error, log: console.log };
  const toDebug = (...parts: unknown[]) => log.debug(`dingtalk sdk: ${format(...parts).slice(0, 300)}`);
  console.info = toDebug;
  console.warn = toDebug;
  console.error = toDebug;
  console.log = toDebug;
  try {
    return task();
  } finally {
    Object.assign(console, saved);
  }
}
