/**
 * ChannelManager: runs the gateway's channels. Starts each one, and when one fails to connect or loses its
 * connection, stops it and starts it again after an exponential backoff (1 s, 2 s, 4 s … capped, ±20 % jitter,
 * longer when the platform asks for it). A setup mistake (a UserError: bad token key, missing SDK) is not retried.
 * Every start has a deadline (`channels.startTimeout`): an SDK that retries for ever without a word (grammy's getMe
 * with no network) counts as a failed start, is logged with the reason and retried with the same backoff.
 * `report()` feeds `/health` and `nanobot channels status`; the errors it records have secrets masked (an SDK's
 * error may quote a request URL with the bot token in it).
 */
import type { MessageBus } from '../bus/message-bus.js';
import { redactSecrets } from '../security/secrets.js';
import { errorMessage, UserError } from '../util/errors.js';
import { type Logger, logFailure, silentLogger } from '../util/log.js';
import type { Channel, ChannelStatus } from './channel.js';

export interface ChannelHealth {
  state: ChannelStatus;
  /** Why the channel is not running (the last error). */
  error?: string;
  /** Reconnects since the gateway started. */
  restarts: number;
  /** When the next attempt starts (ISO time), while the channel waits out its backoff. */
  retryAt?: string;
}

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** A channel that stayed up this long starts over at `initialMs` after its next failure. */
  stableMs: number;
}

export interface ChannelManagerOptions {
  bus: MessageBus;
  channels: readonly Channel[];
  log?: Logger;
  backoff?: Partial<BackoffOptions>;
  /** 0..1; injected for deterministic tests. */
  random?: () => number;
  /** The configured secret values (tokens, keys), masked in recorded and logged errors. */
  secrets?: () => Iterable<string>;
  /** How long one start may take before it counts as failed; read per start, so a reload applies. */
  startTimeoutMs?: () => number;
}

const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1_000, maxMs: 60_000, stableMs: 30_000 };
const STOP_TIMEOUT_MS = 5_000;
export const DEFAULT_START_TIMEOUT_MS = 60_000;

interface Entry {
  channel: Channel;
  health: ChannelHealth;
  /** Consecutive failures, for the backoff. */
  failures: number;
  connectedAt?: number;
  timer?: NodeJS.Timeout;
  /** Stops watching the channel's setup (see `Channel.watchSetup`) while it waits to reconnect. */
  unwatch?: () => void;
  /** Bumped by every (re)start: events of an older connection are ignored. */
  generation: number;
}

export class ChannelManager {
  private entries: Entry[];
  private readonly log: Logger;
  private readonly backoff: BackoffOptions;
  private readonly random: () => number;
  private stopped = false;

  constructor(private readonly options: ChannelManagerOptions) {
    this.log = options.log ?? silentLogger;
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.random = options.random ?? Math.random;
    this.entries = options.channels.map((channel) => ({
      channel,
      health: { state: 'stopped', restarts: 0 },
      failures: 0,
      generation: 0,
    }));
  }

  get channels(): readonly Channel[] {
    return this.entries.map((entry) => entry.channel);
  }

  /** Starts every channel in the background (a slow or failing one does not hold up the others). */
  start(): void {
    for (const entry of this.entries) void this.connect(entry).catch(this.failed(entry));
  }

  /** Runs one more channel (a config reload enabled it), started at once unless the manager stopped. */
  add(channel: Channel): void {
    if (this.entries.some((entry) => entry.channel.name === channel.name)) {
      throw new Error(`channel ${channel.name} already runs`);
    }
    const entry: Entry = { channel, health: { state: 'stopped', restarts: 0 }, failures: 0, generation: 0 };
    this.entries.push(entry);
    if (!this.stopped) void this.connect(entry).catch(this.failed(entry));
  }

  /** Stops a channel and forgets it (a config reload disabled it); false when no channel has that name. */
  async remove(name: string): Promise<boolean> {
    const entry = this.entries.find((candidate) => candidate.channel.name === name);
    if (!entry) return false;
    this.entries = this.entries.filter((candidate) => candidate !== entry);
    this.cancelRetry(entry);
    entry.generation += 1;
    await withTimeout(
      entry.channel.stop().catch((err: unknown) => this.log.debug(`channel ${name}: stop: ${errorMessage(err)}`)),
      STOP_TIMEOUT_MS,
    );
    return true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled(
      this.entries.map(async (entry) => {
        this.cancelRetry(entry);
        entry.generation += 1;
        await withTimeout(entry.channel.stop(), STOP_TIMEOUT_MS);
        entry.health = { ...entry.health, state: 'stopped' };
      }),
    );
  }

  report(): Record<string, ChannelHealth> {
    return Object.fromEntries(this.entries.map((entry) => [entry.channel.name, { ...entry.health }]));
  }

  private async connect(entry: Entry): Promise<void> {
    if (this.stopped) return;
    const generation = ++entry.generation;
    entry.health = { ...entry.health, state: entry.failures > 0 ? 'reconnecting' : 'starting' };
    const timeoutMs = this.options.startTimeoutMs?.() ?? DEFAULT_START_TIMEOUT_MS;
    let deadline: NodeJS.Timeout | undefined;
    try {
      const started = entry.channel.start(this.options.bus, {
        failed: (error, retryAfterMs) => {
          if (generation === entry.generation) void this.recover(entry, error, retryAfterMs).catch(this.failed(entry));
        },
      });
      // A start that outlives its deadline is abandoned (recover stops the channel); its late result is ignored.
      started.catch(() => undefined);
      await Promise.race([
        started,
        new Promise<never>((_, reject) => {
          deadline = setTimeout(() => reject(new StartTimeout(timeoutMs)), timeoutMs);
          deadline.unref?.();
        }),
      ]);
    } catch (err) {
      if (generation !== entry.generation || this.stopped) return;
      if (err instanceof UserError) {
        entry.health = {
          ...entry.health,
          state: 'error',
          error: this.redact(err.hint ? `${err.message} ${err.hint}` : err.message),
        };
        this.log.error(`channel ${entry.channel.name}: ${entry.health.error}`);
        return;
      }
      await this.recover(entry, err instanceof Error ? err : new Error(String(err)));
      return;
    } finally {
      clearTimeout(deadline);
    }
    if (generation !== entry.generation || this.stopped) return;
    entry.connectedAt = Date.now();
    const { error: _cleared, ...rest } = entry.health;
    entry.health = { ...rest, state: 'running' };
    this.log.info(`channel ${entry.channel.name}: connected`);
  }

  /** Stops the broken connection and schedules a new one. */
  private async recover(entry: Entry, error: Error, retryAfterMs = 0): Promise<void> {
    if (this.stopped) return;
    const generation = ++entry.generation;
    if (entry.connectedAt !== undefined && Date.now() - entry.connectedAt >= this.backoff.stableMs) entry.failures = 0;
    entry.connectedAt = undefined;
    const delay = Math.max(retryAfterMs, this.delayFor(entry.failures));
    entry.failures += 1;
    const message = this.redact(errorMessage(error));
    entry.health = {
      state: 'reconnecting',
      error: message,
      restarts: entry.health.restarts,
      retryAt: new Date(Date.now() + delay).toISOString(),
    };
    this.log.warn(
      `channel ${entry.channel.name}: ${message}; reconnecting in ${formatDelay(delay)} (attempt ${entry.failures})`,
    );
    await withTimeout(
      entry.channel
        .stop()
        .catch((err: unknown) =>
          this.log.debug(`channel ${entry.channel.name}: stop: ${this.redact(errorMessage(err))}`),
        ),
      STOP_TIMEOUT_MS,
    );
    if (this.stopped || generation !== entry.generation) return;
    const retry = (): void => {
      if (this.stopped || generation !== entry.generation) return;
      this.cancelRetry(entry);
      const { retryAt: _due, ...rest } = entry.health;
      entry.health = { ...rest, restarts: entry.health.restarts + 1 };
      void this.connect(entry).catch(this.failed(entry));
    };
    entry.timer = setTimeout(retry, delay);
    entry.timer.unref?.();
    entry.unwatch = entry.channel.watchSetup?.(() => {
      if (generation !== entry.generation) return;
      this.log.info(`channel ${entry.channel.name}: its setup changed; connecting now`);
      retry();
    });
  }

  private cancelRetry(entry: Entry): void {
    clearTimeout(entry.timer);
    entry.unwatch?.();
    entry.unwatch = undefined;
  }

  /** For the starts and restarts nobody awaits: a surprise is logged, not left to end the process. */
  private failed(entry: Entry): (err: unknown) => void {
    return logFailure(this.log, `channel ${entry.channel.name}: start failed`);
  }

  private redact(text: string): string {
    return redactSecrets(text, this.options.secrets?.() ?? []);
  }

  private delayFor(failures: number): number {
    const base = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** failures);
    return Math.round(base * (0.8 + 0.4 * this.random()));
  }
}

/** A start that did not finish in time; the message is what the log, `/health` and `channels status` show. */
class StartTimeout extends Error {
  constructor(ms: number) {
    super(
      `did not connect within ${formatDelay(ms)}: no answer from the platform (check the network and the channel's ` +
        'proxy or server address; channels.startTimeout sets the limit in seconds)',
    );
  }
}

function withTimeout(task: Promise<void>, ms: number): Promise<void> {
  return Promise.race([task, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
}

function formatDelay(ms: number): string {
  return ms < 1_000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
}
