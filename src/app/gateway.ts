/**
 * `nanobot gateway` in-process: the agent, the dispatcher, the channels, the health endpoint and any background
 * services on one shared MessageBus, plus config hot reload and a bounded graceful shutdown.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { MessageBus } from '../bus/message-bus.js';
import type { Channel } from '../channels/channel.js';
import { type BackoffOptions, ChannelManager } from '../channels/manager.js';
import { PairingStore } from '../channels/pairing.js';
import { approvedNotice, pairingChatCommand } from '../channels/pairing-command.js';
import { type BuildChannelsOptions, buildChannel, buildEnabledChannels, channelSchemas } from '../channels/registry.js';
import { OutboundRouter } from '../channels/router.js';
import { bindWebUi } from '../channels/websocket/backend.js';
import { type LoadedConfig, loadConfig } from '../config/load.js';
import { configNotices } from '../config/notices.js';
import type { CronService } from '../cron/service.js';
import { type ConfigWatcher, watchConfigFile } from '../gateway/config-watch.js';
import { DeliveryTracker } from '../gateway/deliveries.js';
import { Dispatcher } from '../gateway/dispatcher.js';
import { type GatewayControl, type HealthReport, startHealthServer } from '../gateway/health.js';
import { limitHeapGrowth } from '../gateway/heap.js';
import type { Gateway, GatewayContext, GatewayService, GatewayServiceSpec } from '../gateway/lifecycle.js';
import { isProcessAlive, logFilePath, readState, removeState, writeState } from '../gateway/state-file.js';
import { createVoiceService } from '../providers/voice.js';
import { redactingLogger, secretsOf } from '../security/secrets.js';
import { DeliveryLog } from '../session/delivery.js';
import type { MessageTargetCheck } from '../tools/message.js';
import { errorMessage, UserError } from '../util/errors.js';
import { type Logger, logFailure, silentLogger } from '../util/log.js';
import { type Agent, type CreateAgentOptions, createAgent } from './agent.js';
import { channelSync } from './gateway-channels.js';
import { configReloader, dispatcherSettings } from './gateway-reload.js';
import { gatewayShutdown } from './gateway-shutdown.js';

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
  /** Recorded in gateway.json: `nanobot gateway restart` restarts only a gateway started in the background. */
  launchMode?: 'foreground' | 'background';
  logFile?: string;
  /** Builds the agent (tests inject a fake provider). Defaults to createAgent. */
  createAgent?: (loaded: LoadedConfig, options: CreateAgentOptions) => Promise<Agent>;
  /** Re-reads the config on a file change. Defaults to loadConfig with the same path, workspace and env. */
  reloadConfig?: () => Promise<LoadedConfig>;
  /** Called after a reload was applied (channel settings and the like). */
  onReload?: (loaded: LoadedConfig) => void | Promise<void>;
  /** Keep the V8 heap near its live size (src/gateway/heap.ts); default true. */
  limitHeapGrowth?: boolean;
  /** Runs a cron job now for `nanobot cron run` (POST /cron/run, with the token from the state file). */
  runCronJob?: GatewayControl['runCronJob'];
  /** The cron service the gateway runs (the WebUI's automations change jobs through it). */
  cron?: CronService;
}

export { DRAIN_TIMEOUT_MS } from './gateway-shutdown.js';

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
  const buildOptions: BuildChannelsOptions = {
    config: () => loaded.config,
    pairing,
    dataDir: loaded.dataDir,
    log,
    commands: () => agent.loop.commands.list().map((c) => ({ name: c.name.slice(1), description: c.description })),
    voice: createVoiceService({ config: () => loaded.config, env, dir: join(loaded.dataDir, 'media', 'voice') }),
  };
  // Mutable: a config reload starts and stops channels (gateway-channels.ts) in this same list.
  const channels: Channel[] = options.channels ?? (await buildEnabledChannels(buildOptions));
  const buildAgent = agentBuilder(options.createAgent ?? createAgent, pairing, bus, {
    log,
    bus,
    env,
    messageTargets: messageTargetsOf(channels),
  });
  let agent = await buildAgent(loaded);
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
  const control = options.runCronJob
    ? { token: randomBytes(24).toString('base64url'), runCronJob: options.runCronJob }
    : undefined;
  const health = await startOrShutAgent(agent, () =>
    startHealthServer({
      host,
      port: options.port ?? loaded.config.gateway.port,
      allowNonLoopback: hostSetExplicitly(loaded, env),
      log,
      report: () => healthReport(agent, manager.report()),
      ...(control ? { control } : {}),
    }),
  );

  const deliveries = new DeliveryTracker(new DeliveryLog(agent.sessions.dir), log);
  const dispatcher = new Dispatcher({
    bus,
    loop: agent.loop,
    deliveries,
    maxConcurrent: options.maxConcurrent ?? loaded.runtime.maxConcurrentRequests,
    log,
    settings: dispatcherSettings(loaded),
    providerName: () => agent.provider.name,
    // A message for a busy session joins its running turn (the loop folds it in between tool rounds).
    joinRunningTurns: true,
    unifiedSession: () => loaded.config.agents.defaults.unifiedSession,
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
    // Defined below, once the reloader exists; services only call it after start-up.
    reload: () => reload(),
    ...(options.cron ? { cron: options.cron } : {}),
  };
  const services = buildServices(options.services ?? [], channels, context);

  if (writeStateFile) writeGatewayState(loaded, host, health.port, options.logFile, control?.token, options.launchMode);

  router.start();
  manager.start();
  // Before new turns: answers a killed gateway saved but never sent go out first, in their chats' order.
  await deliveries
    .redeliver(agent.sessions, bus, new Set(channels.map((channel) => channel.name)))
    .catch((err: unknown) => log.warn(`gateway: could not look for undelivered answers: ${errorMessage(err)}`));
  dispatcher.start();
  startServices(services, log);

  const syncChannels = options.channels
    ? undefined
    : channelSync({ channels, manager, router, build: (name) => buildChannel(name, buildOptions), log }, loaded.config);
  let watcher: ConfigWatcher | undefined;
  const stopping = gatewayShutdown({
    get watcher() {
      return watcher;
    },
    dispatcher,
    services,
    router,
    deliveries,
    manager,
    health,
    agents: () => [agent, ...retired],
    removeState: writeStateFile ? () => removeState(loaded.dataDir) : undefined,
    log,
  });
  const reload = configReloader({
    target: {
      loaded: () => loaded,
      agent: () => agent,
      setLoaded: (next) => {
        loaded = next;
      },
      replaceAgent: (fresh) => {
        retired.push(agent);
        agent = fresh;
      },
    },
    reloadConfig:
      options.reloadConfig ??
      (() => loadConfig({ configPath: loaded.configPath, workspace: loaded.workspace, env, home: loaded.home })),
    buildAgent,
    dispatcher,
    closing: () => stopping.closing,
    onReload: async (next) => {
      // Channels given by the caller (tests) are fixed; channels built from the config follow it.
      if (syncChannels) await syncChannels(next.config);
      reconfigureServices(services, next, log);
      await options.onReload?.(next);
    },
    log,
  });
  if (options.watchConfig ?? true) {
    watcher = watchConfigFile(
      loaded.configPath,
      () => void reload().catch(logFailure(log, 'gateway: reload failed')),
      log,
    );
  }

  // Keys set in the config that this version does not act on, or that nobody knows (a typo): said once, at start.
  for (const notice of configNotices(loaded.raw, env, undefined, channelSchemas())) log.warn(`config: ${notice.text}`);
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
    shutdown: stopping.shutdown,
    closed: stopping.closed,
  };
}

/** Builds an agent for a config, with the pairing chat command registered (an approved sender is told so). */
export function agentBuilder(
  make: NonNullable<StartGatewayOptions['createAgent']>,
  pairing: PairingStore,
  bus: MessageBus,
  agentOptions: CreateAgentOptions,
): (loaded: LoadedConfig) => Promise<Agent> {
  const notifyApproved = (approved: { channel: string; chatId: string }) =>
    bus.publishOutbound({ ...approved, content: approvedNotice });
  return async (loaded) => {
    const built = await make(loaded, agentOptions);
    built.loop.commands.register(pairingChatCommand(pairing, notifyApproved));
    return built;
  };
}

/** The message tool writes to another chat only where that channel's access rules admit it. */
export function messageTargetsOf(channels: readonly Channel[]): MessageTargetCheck {
  return (channel, chatId) => {
    const target = channels.find((candidate) => candidate.name === channel);
    if (!target) {
      const running = channels.map((candidate) => candidate.name).join(', ') || 'none';
      return { ok: false as const, why: `no channel "${channel}" runs in this gateway (running: ${running})` };
    }
    return (
      target.admitsChat?.(chatId) ?? { ok: false as const, why: `${channel} takes messages only in the current chat` }
    );
  };
}

/** What /health reports: the live agent's provider and model, and each channel's state (plus the details). */
export function healthReport(
  agent: Pick<Agent, 'provider' | 'model'>,
  channels: ReturnType<ChannelManager['report']>,
): HealthReport {
  return {
    provider: agent.provider.name,
    model: agent.model.model,
    channels: Object.fromEntries(Object.entries(channels).map(([name, health]) => [name, health.state])),
    channelDetails: channels,
  };
}

/** `<dataDir>/gateway.json`: how `nanobot gateway status/stop` find this process. */
function writeGatewayState(
  loaded: LoadedConfig,
  host: string,
  port: number,
  logFile: string | undefined,
  controlToken: string | undefined,
  launchMode: 'foreground' | 'background' = 'foreground',
): void {
  writeState(loaded.dataDir, {
    pid: process.pid,
    host,
    port,
    startedAt: new Date().toISOString(),
    logFile: logFile ?? logFilePath(loaded.dataDir),
    configPath: loaded.configPath,
    ...(controlToken ? { controlToken } : {}),
    launchMode,
  });
}

/** Starts a server; when it cannot, the agent (its MCP servers, shells) is shut before the error propagates. */
async function startOrShutAgent<T>(agent: Pick<Agent, 'shutdown'>, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    await agent.shutdown();
    throw err;
  }
}

/** The configured services and the WebUI's REST routes (bindWebUi: a no-op without it), factories applied. */
function buildServices(
  specs: readonly GatewayServiceSpec[],
  channels: readonly Channel[],
  context: GatewayContext,
): GatewayService[] {
  return [...specs, bindWebUi(channels)].map((spec) => (typeof spec === 'function' ? spec(context) : spec));
}

/** A service that fails to start is logged; the others and the gateway keep running. */
export function startServices(services: readonly GatewayService[], log: Logger): void {
  for (const service of services) {
    try {
      service.start();
    } catch (err) {
      log.error(`gateway: service ${service.name ?? '(unnamed)'} did not start: ${errorMessage(err)}`);
    }
  }
}

/** Hands a reloaded config to the services that take one; one that throws is logged and keeps its settings. */
function reconfigureServices(services: readonly GatewayService[], loaded: LoadedConfig, log: Logger): void {
  for (const service of services) {
    try {
      service.reconfigure?.(loaded);
    } catch (err) {
      log.error(`gateway: service ${service.name ?? '(unnamed)'} kept its settings: ${errorMessage(err)}`);
    }
  }
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
