/**
 * What a running gateway is, what its background services see, and how SIGINT/SIGTERM stop it. The gateway itself
 * is put together by the wiring (src/app/gateway.ts); these types live here so services and channels can use them
 * without importing the wiring.
 */
import type { Agent } from '../agent/agent.js';
import type { MessageBus } from '../bus/message-bus.js';
import type { ChannelHealth } from '../channels/manager.js';
import type { LoadedConfig } from '../config/load.js';
import type { CronService } from '../cron/service.js';
import { errorMessage } from '../util/errors.js';
import { type Logger, silentLogger } from '../util/log.js';
import type { Dispatcher } from './dispatcher.js';

/** A background service (cron, heartbeat, auto-compaction…) that lives as long as the gateway. */
export interface GatewayService {
  readonly name?: string;
  start(): void;
  /** Stops taking new work and ends what runs; bounded by the shutdown budget. */
  stop(): Promise<void>;
  /** A config reload was applied: a service that reads settings at start picks up the new ones here. */
  reconfigure?(loaded: LoadedConfig): void;
}

/** What a service factory gets: the shared bus and the live agent/config (both change on a reload). */
export interface GatewayContext {
  bus: MessageBus;
  dispatcher: Dispatcher;
  agent(): Agent;
  loaded(): LoadedConfig;
  log: Logger;
  /** The channels this gateway runs and their state (what `/health` shows). */
  channels(): Record<string, ChannelHealth>;
  /** Re-reads the config file and applies it now (the file watcher would, a moment later); false if invalid. */
  reload(): Promise<boolean>;
  /** The cron service this gateway runs, when it runs one (every job change goes through it). */
  cron?: CronService;
}

export type GatewayServiceSpec = GatewayService | ((context: GatewayContext) => GatewayService);

export interface Gateway {
  bus: MessageBus;
  dispatcher: Dispatcher;
  host: string;
  port: number;
  agent(): Agent;
  loaded(): LoadedConfig;
  /** Re-reads the config and applies it; false when the edit was invalid (the old config stays). */
  reload(): Promise<boolean>;
  /** Stops taking messages, drains turns (≤ 8 s), stops everything and removes the state file. Idempotent. */
  shutdown(reason?: string): Promise<void>;
  /** Resolves when shutdown has finished. */
  closed: Promise<void>;
}

export interface SignalHandlerOptions {
  log?: Logger;
  exit?: (code: number) => void;
  /** A shutdown that takes longer than this exits anyway (code 1). */
  hardDeadlineMs?: number;
}

/** SIGINT/SIGTERM: graceful shutdown then exit 0; a second signal or the deadline exits at once. Returns an undo. */
export function installSignalHandlers(gateway: Gateway, options: SignalHandlerOptions = {}): () => void {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const log = options.log ?? silentLogger;
  let received = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (received) {
      log.warn(`gateway: second ${signal}; exiting without waiting`);
      exit(1);
      return;
    }
    received = true;
    setTimeout(() => {
      log.error('gateway: shutdown did not finish in time; exiting');
      exit(1);
    }, options.hardDeadlineMs ?? 9_500).unref();
    gateway.shutdown(signal).then(
      () => exit(0),
      (err: unknown) => {
        log.error(`gateway: shutdown failed: ${errorMessage(err)}`);
        exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}
