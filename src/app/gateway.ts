/**
 * `nanobot gateway` in-process: the agent, the dispatcher, the channels, the health endpoint and any background
 * services on one shared MessageBus, plus config hot reload and a bounded graceful shutdown.
 */
import { join } from 'node:path';
import { MessageBus } from '../bus/message-bus.js';
import type { Channel } from '../channels/channel.js';
import { type BackoffOptions, ChannelManager } from '../channels/manager.js';
import { PairingStore } from '../channels/pairing.js';
import { pairingChatCommand } from '../channels/pairing-command.js';
import { buildEnabledChannels } from '../channels/registry.js';
import { OutboundRouter } from '../channels/router.js';
import { bindWebUi } from '../channels/websocket/backend.js';
import { type LoadedConfig, loadConfig } from '../config/load.js';
import { type ConfigWatcher, watchConfigFile } from '../gateway/config-watch.js';
import { DeliveryTracker } from '../gateway/deliveries.js';
import { Dispatcher, type DispatcherSettings } from '../gateway/dispatcher.js';
import { type HealthServer, startHealthServer } from '../gateway/health.js';
import { limitHeapGrowth } from '../gateway/heap.js';
import type { Gateway, GatewayContext, GatewayServiceSpec } from '../gateway/lifecycle.js';
import { isProcessAlive, logFilePath, readState, removeState, writeState } from '../gateway/state-file.js';
import { redactingLogger, secretsOf } from '../security/secrets.js';
import { DeliveryLog } from '../session/delivery.js';
import { errorMessage, UserError } from '../util/errors.js';
import { type Logger, logFailure, silentLogger } from '../util/log.js';
import { type Agent, type CreateAgentOptions, createAgent } from './agent.js';

export interface StartGatewayOptions {
  loaded: LoadedConfig;
  log?: Logger;
  /** The channels to run; default: those enabled in `channels.<name>` of the config. */
  channels?: Channel[];
  /** Reconnect backoff of the channels (tests shorten it). */
  channelBackoff?: Partial<BackoffOptions>;
  services?: GatewayServiceSpec[];
  /** Overrides gateway.port; 0 picks a free port. */
  port?: number;
  /** Defaults to loaded.runtime.maxConcurrentRequests. */
  maxConcurrent?: number;
  env?: NodeJS.ProcessEnv;
  /** Reload on config file edits (default true). */
  watchConfig?: boolean;
  /** Write `<dataDir>/gateway.json` (default true). */
  writeStateFile?: boolean;
  logFile?: string;
  /** Builds the agent (tests inject a fake provider). Defaults to createAgent. */
  createAgent?: (loaded: LoadedConfig, options: CreateAgentOptions) => Promise<Agent>;
  /** Re-reads the config on a file change. Defaults to loadConfig with the same path, workspace and env. */
  reloadConfig?: () => Promise<LoadedConfig>;
  /** Called after a reload was applied (channel settings and the like). */
  onReload?: (loaded: LoadedConfig) => void | Promise<void>;
  /** Keep the V8 heap near its live size (src/gateway/heap.ts); default true. */
  limitHeapGrowth?: boolean;
}

export const DRAIN_TIMEOUT_MS = 8_000;
const SERVICE_STOP_MS = 8_000;
const OUTBOUND_FLUSH_MS = 700;
const CHANNEL_STOP_MS = 700;

export async function startGateway(options: StartGatewayOptions): Promise<Gateway> {
  const env = options.env ?? process.env;
  let loaded = options.loaded;
  // Channel SDK errors can quote request URLs with tokens in them: the gateway log never shows a configured secret.
  const log = redactingLogger(options.log ?? silentLogger, () => secretsOf(loaded.config));
  const writeStateFile = options.writeStateFile ?? true;
  if (writeStateFile) refuseSecondGateway(loaded.dataDir);
  if (options.limitHeapGrowth ?? true) limitHeapGrowth();

  const bus = new MessageBus();
  const pairing = new PairingStore({ dir: join(loaded.dataDir, 'pairing') });
  // Built before anything starts: a setup mistake (no token, SDK missing) stops here with a message naming it.
  const channels =
    options.channels ??
    (await buildEnabledChannels({
      config: () => loaded.config,
      pairing,
      dataDir: loaded.dataDir,
      log,
      commands: () => agent.loop.commands.list().map((c) => ({ name: c.name.slice(1), description: c.description })),
    }));
  const makeAgent = options.createAgent ?? createAgent;
  // An approved sender is told so in the chat they asked from.
  const notifyApproved = (approved: { channel: string; chatId: string }) =>
    bus.publishOutbound({ ...approved, content: 'You are approved: you can talk to the agent now.' });
  const withPairing = (built: Agent): Agent => {
    built.loop.commands.register(pairingChatCommand(pairing, notifyApproved));
    return built;
  };
  // The message tool writes to another chat only where that channel's access rules admit it.
  const messageTargets = (channel: string, chatId: string) => {
    const target = channels.find((candidate) => candidate.name === channel);
    if (!target) {
      const running = channels.map((candidate) => candidate.name).join(', ') || 'none';
      return { ok: false as const, why: `no channel "${channel}" runs in this gateway (running: ${running})` };
    }
    return (
      target.admitsChat?.(chatId) ?? { ok: false as const, why: `${channel} takes messages only in the current chat` }
    );
  };
  let agent = withPairing(await makeAgent(loaded, { log, bus, env, messageTargets }));
  const retired: Agent[] = [];
  const manager = new ChannelManager({
    bus,
    channels,
    log,
    secrets: () => secretsOf(loaded.config),
    startTimeoutMs: () => loaded.config.channels.startTimeout * 1000,
    ...(options.channelBackoff ? { backoff: options.channelBackoff } : {}),
  });

  const { host } = loaded.config.gateway;
  let health: HealthServer;
  try {
    health = await startHealthServer({
      host,
      port: options.port ?? loaded.config.gateway.port,
      allowNonLoopback: hostSetExplicitly(loaded, env),
      log,
      report: () => ({
        provider: agent.provider.name,
        model: agent.model.model,
        channels: Object.fromEntries(Object.entries(manager.report()).map(([name, health]) => [name, health.state])),
        channelDetails: manager.report(),
      }),
    });
  } catch (err) {
    await agent.shutdown();
    throw err;
  }

  const deliveries = new DeliveryTracker(new DeliveryLog(agent.sessions.dir), log);
  const dispatcher = new Dispatcher({
    bus,
    loop: agent.loop,
    deliveries,
    maxConcurrent: options.maxConcurrent ?? loaded.runtime.maxConcurrentRequests,
    log,
    settings: dispatcherSettings(loaded),
    // A message for a busy session joins its running turn (the loop folds it in between tool rounds).
    joinRunningTurns: true,
  });
  const router = new OutboundRouter({
    bus,
    channels,
    log,
    maxRetries: () => loaded.config.channels.sendMaxRetries,
    onSettled: deliveries.settled,
  });
  const context: GatewayContext = {
    bus,
    dispatcher,
    agent: () => agent,
    loaded: () => loaded,
    log,
    channels: () => manager.report(),
  };
  // The WebUI's REST routes read the live agent, its sessions and the cron jobs (bindWebUi: a no-op without it).
  const services = [...(options.services ?? []), bindWebUi(channels)].map((spec) =>
    typeof spec === 'function' ? spec(context) : spec,
  );

  if (writeStateFile) {
    writeState(loaded.dataDir, {
      pid: process.pid,
      host,
      port: health.port,
      startedAt: new Date().toISOString(),
      logFile: options.logFile ?? logFilePath(loaded.dataDir),
      configPath: loaded.configPath,
    });
  }

  router.start();
  manager.start();
  // Before new turns: answers a killed gateway saved but never sent go out first, in their chats' order.
  await deliveries
    .redeliver(agent.sessions, bus, new Set(channels.map((channel) => channel.name)))
    .catch((err: unknown) => log.warn(`gateway: could not look for undelivered answers: ${errorMessage(err)}`));
  dispatcher.start();
  for (const service of services) {
    try {
      service.start();
    } catch (err) {
      log.error(`gateway: service ${service.name ?? '(unnamed)'} did not start: ${errorMessage(err)}`);
    }
  }

  let closing: Promise<void> | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });

  // Reloads run one at a time; an edit during a reload is picked up by the next one.
  let reloading: Promise<boolean> = Promise.resolve(true);
  const reloadConfig =
    options.reloadConfig ??
    (() => loadConfig({ configPath: loaded.configPath, workspace: loaded.workspace, env, home: loaded.home }));
  const applyReload = async (): Promise<boolean> => {
    if (closing) return false;
    let next: LoadedConfig;
    try {
      next = await reloadConfig();
    } catch (err) {
      log.warn(`gateway: config edit ignored, still running the previous config: ${describe(err)}`);
      return false;
    }
    const [before, after] = [loaded.config.gateway, next.config.gateway];
    if (before.host !== after.host || before.port !== after.port) {
      log.warn('gateway: gateway.host/port changes apply after a restart');
    }
    if (agentSettingsChanged(loaded, next)) {
      let fresh: Agent;
      try {
        fresh = withPairing(await makeAgent(next, { log, bus, env, messageTargets }));
      } catch (err) {
        log.warn(`gateway: config edit ignored, the agent could not be built from it: ${describe(err)}`);
        return false;
      }
      // Between turns: the dispatcher holds new turns until the running ones end, then swaps.
      if (!(await dispatcher.replaceLoop(fresh.loop))) {
        await fresh.shutdown();
        return false;
      }
      // Background exec sessions of the old agent may still be in use: they are ended at exit. Its MCP servers are
      // not (the new agent started its own), so they stop now rather than piling up with every config edit.
      await agent.mcp?.close();
      retired.push(agent);
      agent = fresh;
    }
    loaded = next;
    dispatcher.updateSettings(dispatcherSettings(next));
    log.info(`gateway: config reloaded (model ${agent.model.model} via ${agent.provider.name})`);
    try {
      await options.onReload?.(next);
    } catch (err) {
      log.warn(`gateway: a reload listener failed: ${errorMessage(err)}`);
    }
    return true;
  };
  const reload = (): Promise<boolean> => {
    reloading = reloading.then(applyReload, applyReload);
    return reloading;
  };

  let watcher: ConfigWatcher | undefined;
  if (options.watchConfig ?? true) {
    watcher = watchConfigFile(
      loaded.configPath,
      () => void reload().catch(logFailure(log, 'gateway: reload failed')),
      log,
    );
  }

  const shutdown = (reason = 'requested'): Promise<void> => {
    closing ??= (async () => {
      const started = Date.now();
      log.info(`gateway: shutting down (${reason})`);
      watcher?.close();
      const [drained] = await Promise.all([
        dispatcher.drain(DRAIN_TIMEOUT_MS),
        Promise.allSettled(services.map((service) => withTimeout(service.stop(), SERVICE_STOP_MS))),
      ]);
      await router.stop(OUTBOUND_FLUSH_MS);
      await deliveries.flush();
      await withTimeout(manager.stop(), CHANNEL_STOP_MS);
      await health.close();
      await Promise.allSettled([agent, ...retired].map((a) => a.shutdown()));
      if (writeStateFile) removeState(loaded.dataDir);
      const note = drained.aborted ? '; turns still running were aborted after checkpointing' : '';
      log.info(`gateway: stopped in ${Date.now() - started} ms${note}`);
      resolveClosed();
    })();
    return closing;
  };

  log.info(
    `gateway: listening on http://${host}:${health.port}/health · model ${agent.model.model} via ` +
      `${agent.provider.name} · ${channels.length} channel(s) · up to ${dispatcher.maxConcurrentSessions} sessions at once`,
  );
  return {
    bus,
    dispatcher,
    host,
    port: health.port,
    agent: () => agent,
    loaded: () => loaded,
    reload,
    shutdown,
    closed,
  };
}

function refuseSecondGateway(dataDir: string): void {
  const state = readState(dataDir);
  if (state && isProcessAlive(state.pid)) {
    throw new UserError(
      `A gateway is already running for this config (pid ${state.pid}, port ${state.port}).`,
      'Stop it with `nanobot gateway stop`, or use another --config for a second instance.',
    );
  }
}

/** A non-loopback bind must be asked for: gateway.host in the file or NANOBOT_GATEWAY__HOST. */
function hostSetExplicitly(loaded: LoadedConfig, env: NodeJS.ProcessEnv): boolean {
  const gateway = loaded.raw.gateway;
  const inFile = typeof gateway === 'object' && gateway !== null && 'host' in gateway;
  return inFile || env.NANOBOT_GATEWAY__HOST !== undefined;
}

function dispatcherSettings(loaded: LoadedConfig): Partial<DispatcherSettings> {
  return {
    sendToolHints: loaded.config.channels.sendToolHints,
    showReasoning: loaded.config.channels.showReasoning,
    toolHintMaxLength: loaded.config.agents.defaults.toolHintMaxLength,
  };
}

/** Everything except channel and gateway settings feeds the agent (provider, model, keys, tools…). */
function agentSettingsChanged(before: LoadedConfig, after: LoadedConfig): boolean {
  const relevant = ({ config }: LoadedConfig) => {
    const { channels: _channels, gateway: _gateway, ...rest } = config;
    return JSON.stringify(rest);
  };
  return relevant(before) !== relevant(after);
}

function describe(err: unknown): string {
  return err instanceof UserError ? err.message.replace(/\n\s*/g, ' ') : errorMessage(err);
}

function withTimeout(task: Promise<void>, ms: number): Promise<void> {
  return Promise.race([task, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
}
