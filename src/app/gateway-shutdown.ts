/**
 * The gateway's bounded graceful shutdown, in order: stop watching the config; drain the turns while the services
 * stop; flush outbound messages and the delivery log; stop the channels, then the health server; shut every agent
 * (the live one and those retired by reloads); remove the state file. Runs once however often it is asked for.
 */
import type { GatewayService } from '../gateway/lifecycle.js';
import type { Logger } from '../util/log.js';

export const DRAIN_TIMEOUT_MS = 8_000;
const SERVICE_STOP_MS = 8_000;
const OUTBOUND_FLUSH_MS = 700;
const CHANNEL_STOP_MS = 700;

/** What the shutdown stops, each by the narrow interface it uses (fakes in tests). */
export interface ShutdownParts {
  watcher?: { close(): void } | undefined;
  dispatcher: { drain(timeoutMs: number): Promise<{ aborted: boolean }> };
  services: readonly Pick<GatewayService, 'stop'>[];
  router: { stop(flushMs: number): Promise<void> };
  deliveries: { flush(): Promise<void> };
  manager: { stop(): Promise<void> };
  health: { close(): Promise<void> };
  /** The live agent and the retired ones, read when the shutdown reaches them. */
  agents: () => readonly { shutdown(): Promise<void> }[];
  /** Removes `<dataDir>/gateway.json` (absent when the gateway wrote none). */
  removeState?: (() => void) | undefined;
  log: Logger;
  now?: () => number;
}

export interface GatewayShutdown {
  shutdown(reason?: string): Promise<void>;
  /** Whether a shutdown has begun (a reload then does nothing). */
  readonly closing: boolean;
  /** Resolves when shutdown has finished. */
  closed: Promise<void>;
}

export function gatewayShutdown(parts: ShutdownParts): GatewayShutdown {
  const { log } = parts;
  const now = parts.now ?? Date.now;
  let closing: Promise<void> | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  const shutdown = (reason = 'requested'): Promise<void> => {
    closing ??= (async () => {
      const started = now();
      log.info(`gateway: shutting down (${reason})`);
      parts.watcher?.close();
      const [drained] = await Promise.all([
        parts.dispatcher.drain(DRAIN_TIMEOUT_MS),
        Promise.allSettled(parts.services.map((service) => withTimeout(service.stop(), SERVICE_STOP_MS))),
      ]);
      await parts.router.stop(OUTBOUND_FLUSH_MS);
      await parts.deliveries.flush();
      await withTimeout(parts.manager.stop(), CHANNEL_STOP_MS);
      await parts.health.close();
      await Promise.allSettled(parts.agents().map((agent) => agent.shutdown()));
      parts.removeState?.();
      const note = drained.aborted ? '; turns still running were aborted after checkpointing' : '';
      log.info(`gateway: stopped in ${now() - started} ms${note}`);
      resolveClosed();
    })();
    return closing;
  };
  return {
    shutdown,
    get closing() {
      return closing !== undefined;
    },
    closed,
  };
}

/** The task, or nothing after `ms` (a stuck service or channel must not hold the exit). */
export function withTimeout(task: Promise<void>, ms: number): Promise<void> {
  return Promise.race([task, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
}
