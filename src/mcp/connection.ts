/**
 * One configured MCP server: connecting (with a deadline), listing what it offers, following
 * `notifications/*\/list_changed`, and recovering. When a call finds the connection gone (the stdio process died, the
 * HTTP session expired), the server is reconnected with backoff and the call is retried once. A server that could not
 * be reached at start is retried in the background, less and less often, so it joins once it is up.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../config/schema.js';
import type { Logger } from '../util/log.js';
import { packageVersion } from '../util/paths.js';
import { type McpCaller, type McpTool, type ServerListing, wrapCapabilities } from './capabilities.js';
import { describeCallFailure, describeConnectFailure, isConnectionLost } from './errors.js';
import { listCapabilities } from './listing.js';
import { ToolFilter } from './names.js';
import { type McpTransportType, type OpenedTransport, openTransport, type TransportDeps } from './transport.js';

export type McpServerState = 'connecting' | 'connected' | 'disconnected' | 'failed' | 'closed';

export interface McpServerStatus {
  name: string;
  transport: McpTransportType;
  state: McpServerState;
  tools: number;
  resources: number;
  prompts: number;
  /** Why the server is failed or disconnected. */
  error?: string;
  /** The stdio server's process id while connected. */
  pid?: number;
}

export interface McpConnectionOptions {
  name: string;
  settings: McpServerConfig;
  transport: McpTransportType;
  deps: TransportDeps;
  log: Logger;
  connectTimeoutMs: number;
  /** Waits before each reconnect attempt after a lost connection (the first is usually 0). */
  reconnectDelaysMs: readonly number[];
  /** Waits between background attempts for a server that is down; empty = no background retries. */
  retryDelaysMs: readonly number[];
  /** The server's current tools, after every (re)connect and list change. */
  onTools: (tools: McpTool[]) => void;
}

interface Live {
  client: Client;
  opened: OpenedTransport;
}

/** list_changed notifications often come in bursts (one per registered tool); refresh once per burst. */
const REFRESH_DEBOUNCE_MS = 50;

export class McpConnection implements McpCaller {
  private live: Live | undefined;
  private state: McpServerState = 'connecting';
  private error: string | undefined;
  private pending: Promise<Live> | undefined;
  private closed = false;
  private counts = { tools: 0, resources: 0, prompts: 0 };
  private readonly filter: ToolFilter;
  private refreshTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private warnedUnmatched = false;
  private everConnected = false;

  constructor(private readonly options: McpConnectionOptions) {
    this.filter = new ToolFilter(options.name, options.settings.enabledTools);
  }

  get name(): string {
    return this.options.name;
  }

  status(): McpServerStatus {
    const pid = this.state === 'connected' ? this.live?.opened.pid() : undefined;
    return {
      name: this.name,
      transport: this.options.transport,
      state: this.state,
      ...this.counts,
      ...(this.error !== undefined && this.state !== 'connected' ? { error: this.error } : {}),
      ...(pid !== undefined ? { pid } : {}),
    };
  }

  /** The first connection; never throws (a failure is logged, kept for status, and retried in the background). */
  async start(): Promise<void> {
    // One attempt: a broken server should not hold up start-up for a whole backoff.
    await this.reconnect(undefined, [0]).catch(() => this.scheduleBackgroundRetry(0));
  }

  /** One attempt now when not connected (a background retry may be waiting); never throws. */
  async retry(): Promise<void> {
    if (this.closed || this.state === 'connected') return;
    clearTimeout(this.retryTimer);
    await this.reconnect(this.live, [0]).catch(() => this.scheduleBackgroundRetry(0));
  }

  async request<T>(run: (client: Client, options: RequestOptions) => Promise<T>, signal: AbortSignal): Promise<T> {
    const timeoutS = this.options.settings.toolTimeout;
    const requestOptions = { timeout: timeoutS * 1000, signal };
    const live = await this.ensureLive();
    try {
      return await run(live.client, requestOptions);
    } catch (error) {
      if (signal.aborted) throw new Error('The MCP call was cancelled.');
      if (!isConnectionLost(error) || this.closed) throw new Error(describeCallFailure(error, this.name, timeoutS));
      this.options.log.warn(`MCP server '${this.name}': connection lost (${describe(error)}); reconnecting`);
      const fresh = await this.reconnect(live, this.options.reconnectDelaysMs);
      try {
        return await run(fresh.client, requestOptions);
      } catch (retryError) {
        if (signal.aborted) throw new Error('The MCP call was cancelled.');
        throw new Error(describeCallFailure(retryError, this.name, timeoutS));
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.state = 'closed';
    clearTimeout(this.refreshTimer);
    clearTimeout(this.retryTimer);
    const live = this.live;
    this.live = undefined;
    await Promise.allSettled([live?.client.close(), this.pending?.then((late) => late.client.close())]);
  }

  private async ensureLive(): Promise<Live> {
    if (this.closed) throw new Error(`MCP server '${this.name}' is shut down.`);
    if (this.live && this.state === 'connected') return this.live;
    return this.reconnect(this.live, this.options.reconnectDelaysMs);
  }

  /** One reconnect at a time: callers that saw the same dead connection share it. */
  private reconnect(stale: Live | undefined, delaysMs: readonly number[]): Promise<Live> {
    if (this.live && this.live !== stale && this.state === 'connected') return Promise.resolve(this.live);
    this.pending ??= this.connectWithBackoff(stale, delaysMs).finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async connectWithBackoff(stale: Live | undefined, delaysMs: readonly number[]): Promise<Live> {
    const wasFailed = this.state === 'failed';
    this.state = 'connecting';
    if (stale) {
      this.live = undefined;
      await stale.client.close().catch(() => {});
    }
    for (const delay of delaysMs) {
      if (delay > 0) await sleep(delay);
      if (this.closed) break;
      try {
        return await this.open();
      } catch (error) {
        this.error = error instanceof Error ? error.message : String(error);
      }
    }
    if (this.closed) throw new Error(`MCP server '${this.name}' is shut down.`);
    const message = `MCP server '${this.name}' is unavailable: ${this.error}`;
    // Background retries of a server that stays down would repeat the same warning every few minutes.
    if (wasFailed) this.options.log.debug(message);
    else this.options.log.warn(message);
    this.state = 'failed';
    throw new Error(`MCP server '${this.name}' is unavailable: ${this.error}`);
  }

  private async open(): Promise<Live> {
    const { settings, deps, connectTimeoutMs, log } = this.options;
    const opened = openTransport(settings, this.options.transport, {
      ...deps,
      onStderr: (line) => log.debug(`MCP server '${this.name}' stderr: ${line}`),
    });
    const client = new Client({ name: 'nanobot', version: packageVersion() }, { capabilities: {} });
    const live: Live = { client, opened };
    client.onerror = (error) => log.debug(`MCP server '${this.name}': ${describe(error)}`);
    client.onclose = () => this.onClosed(live);
    const refresh = () => this.scheduleRefresh(live);
    client.setNotificationHandler(ToolListChangedNotificationSchema, refresh);
    client.setNotificationHandler(ResourceListChangedNotificationSchema, refresh);
    client.setNotificationHandler(PromptListChangedNotificationSchema, refresh);
    let listing: ServerListing;
    try {
      listing = await withDeadline(
        (async () => {
          await client.connect(opened.transport, { timeout: connectTimeoutMs });
          return listCapabilities(client, this.filter.allowsAll, { timeout: connectTimeoutMs }, log, this.name);
        })(),
        connectTimeoutMs,
        `no answer within ${connectTimeoutMs / 1000}s`,
      );
    } catch (error) {
      await client.close().catch(() => {});
      throw new Error(describeConnectFailure(error, settings.command ?? undefined, opened.stderrTail()));
    }
    if (this.closed) {
      await client.close().catch(() => {});
      throw new Error(`MCP server '${this.name}' is shut down.`);
    }
    const recovered = this.everConnected;
    this.everConnected = true;
    this.live = live;
    this.state = 'connected';
    this.error = undefined;
    this.publish(listing);
    log.info(
      `MCP server '${this.name}': ${recovered ? 'reconnected' : 'connected'}, ${this.counts.tools} tools, ` +
        `${this.counts.resources} resources, ${this.counts.prompts} prompts`,
    );
    return live;
  }

  private publish(listing: ServerListing): void {
    const tools = wrapCapabilities(listing, { server: this.name, caller: this, filter: this.filter });
    const unmatched = this.filter.unmatched();
    if (unmatched.length > 0 && !this.warnedUnmatched) {
      this.warnedUnmatched = true;
      this.options.log.warn(
        `MCP server '${this.name}': enabledTools entries not found: ${unmatched.join(', ')}. ` +
          `Available: ${listing.tools.map((tool) => tool.name).join(', ') || '(none)'}`,
      );
    }
    const count = (kind: McpTool['kind']) => tools.filter((tool) => tool.kind === kind).length;
    this.counts = { tools: count('tool'), resources: count('resource'), prompts: count('prompt') };
    this.options.onTools(tools);
  }

  private onClosed(live: Live): void {
    if (this.closed || this.live !== live) return;
    this.state = 'disconnected';
    const tail = live.opened.stderrTail().split('\n').at(-1);
    this.error = `the connection closed${tail ? ` (last stderr: ${tail.slice(-200)})` : ''}; reconnects on next use`;
    this.options.log.warn(`MCP server '${this.name}': ${this.error}`);
  }

  private scheduleRefresh(live: Live): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => void this.refresh(live), REFRESH_DEBOUNCE_MS);
    this.refreshTimer.unref();
  }

  private async refresh(live: Live): Promise<void> {
    if (this.closed || this.live !== live) return;
    const timeout = this.options.connectTimeoutMs;
    try {
      const listing = await listCapabilities(
        live.client,
        this.filter.allowsAll,
        { timeout },
        this.options.log,
        this.name,
      );
      if (this.closed || this.live !== live) return;
      this.publish(listing);
      this.options.log.info(`MCP server '${this.name}': tool list changed, now ${this.counts.tools} tools`);
    } catch (error) {
      this.options.log.warn(`MCP server '${this.name}': could not refresh its tool list: ${describe(error)}`);
    }
  }

  private scheduleBackgroundRetry(attempt: number): void {
    const delays = this.options.retryDelaysMs;
    const delay = delays[Math.min(attempt, delays.length - 1)];
    if (delay === undefined || this.closed) return;
    this.retryTimer = setTimeout(() => {
      if (this.closed || this.state === 'connected') return;
      this.reconnect(this.live, [0]).catch(() => this.scheduleBackgroundRetry(attempt + 1));
    }, delay);
    this.retryTimer.unref();
  }
}

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

// Not unref'd: a call waiting to reconnect is what keeps a one-shot `nanobot agent -m` alive.
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Rejects with `message` after `ms`; the caller closes whatever was still starting. */
function withDeadline<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
