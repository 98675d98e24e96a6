/**
 * Wires an AgentLoop from a loaded config: provider, tools, sessions, context. Shared by every surface.
 */
import type { Agent } from '../agent/agent.js';
import { goalCommand } from '../agent/commands/goal.js';
import { promptCommands } from '../agent/commands/prompts.js';
import { skillCommand } from '../agent/commands/skill.js';
import { triggerCommand } from '../agent/commands/trigger.js';
import { type FollowUpMode, followUpSink } from '../agent/follow-ups.js';
import { Goals } from '../agent/goals.js';
import { AgentLoop } from '../agent/loop.js';
import { SubagentManager, subagentSystemPrompt, subagentToolRegistry } from '../agent/subagents.js';
import { MessageBus } from '../bus/message-bus.js';
import type { LoadedConfig } from '../config/load.js';
import type { ModelSettings } from '../config/model.js';
import { CronService } from '../cron/service.js';
import type { McpManager } from '../mcp/manager.js';
import { buildProvider, modelInForce, type ProviderChainOptions } from '../providers/chain.js';
import { CircuitBreakers } from '../providers/fallback.js';
import type { LLMProvider } from '../providers/types.js';
import type { NetworkPolicy } from '../security/network.js';
import { recordTokenUsage } from '../session/token-usage.js';
import { createCronTool } from '../tools/cron.js';
import { killAllShellProcesses } from '../tools/exec-process.js';
import { createGoalTools } from '../tools/goal.js';
import type { MessageTargetCheck } from '../tools/message.js';
import type { ToolRegistry } from '../tools/registry.js';
import { createSearchHistoryTool } from '../tools/search-history.js';
import { createSpawnTool } from '../tools/spawn.js';
import { type Logger, silentLogger } from '../util/log.js';
import { type AgentMemory, buildMemory, dreamCommands } from './agent-memory.js';
import { type MakeRunner, modelCatalog, presetRunners, runnerFactory } from './agent-runners.js';
import { type BaseTools, baseTools } from './agent-tools.js';

export type { Agent };

export interface CreateAgentOptions {
  log?: Logger;
  env?: NodeJS.ProcessEnv;
  bus?: MessageBus;
  /** The gateway's running cron service; without it jobs are only written for the gateway to run. */
  cron?: CronService;
  /** `/restart`: schedule a restart and return (the reply is delivered first). Without it, /restart explains. */
  restart?: () => void | Promise<void>;
  /**
   * How follow-up turns (a subagent's report) reach their session: `bus` publishes them inbound for the caller's
   * dispatcher, `loop` runs them in the loop and publishes the answer outbound. Default: `bus` when the caller
   * brought its own bus (the gateway consumes it), `loop` otherwise (`nanobot agent`).
   */
  followUps?: FollowUpMode;
  /** Which other chats the `message` tool may write to (the gateway asks its channels); default: none. */
  messageTargets?: MessageTargetCheck;
}

const notRunning = async () => ({ status: 'error' as const, error: 'cron jobs run in `nanobot gateway`' });

/**
 * The provider for a model (with the configured fallbacks and prices), or a UserError that says which key to set.
 * Pass one `breakers` per agent so every runner skips the same failing models.
 */
export function providerFor(
  loaded: LoadedConfig,
  model: ModelSettings,
  env: NodeJS.ProcessEnv,
  options: ProviderChainOptions = {},
): LLMProvider {
  return buildProvider(loaded, model, env, options);
}

export { providerSettings } from '../providers/chain.js';

/** Connects the configured MCP servers; without any, the MCP SDK is never even loaded. */
async function connectMcpServers(
  loaded: LoadedConfig,
  registry: ToolRegistry,
  network: NetworkPolicy,
  env: NodeJS.ProcessEnv,
  log: Logger,
): Promise<McpManager | undefined> {
  const servers = loaded.config.tools.mcpServers;
  if (Object.keys(servers).length === 0) return undefined;
  const { startMcpServers } = await import('../mcp/manager.js');
  return startMcpServers({ servers, registry, network, env, home: loaded.home, log });
}

export async function createAgent(loaded: LoadedConfig, options: CreateAgentOptions = {}): Promise<Agent> {
  const { config, workspace } = loaded;
  const env = options.env ?? process.env;
  const log = options.log ?? silentLogger;
  const model = modelInForce(loaded, env);
  if (model.autoChosen) log.info(model.autoChosen);
  const chain = { breakers: new CircuitBreakers(), log };
  const provider = providerFor(loaded, model, env, chain);

  const bus = options.bus ?? new MessageBus();
  const base = baseTools(loaded, env, bus, options.messageTargets);
  const { tools } = base;
  const memory = await buildMemory(loaded, provider, model, env, log);
  const { sessions, context } = memory;
  tools.register(createSearchHistoryTool({ history: memory.history, sessions }));
  // Without a running gateway the service is not started: adding a job writes jobs.json, and the gateway fires it.
  const cron =
    options.cron ?? new CronService({ workspace, timezone: config.agents.defaults.timezone, log, onRun: notRunning });
  tools.register(
    createCronTool({
      service: cron,
      timezone: config.agents.defaults.timezone,
      presets: () => Object.keys(config.modelPresets),
    }),
  );
  const makeRunner = runnerFactory(loaded, tools);
  const commands = {
    ...dreamCommands(workspace, memory.history, () => ({
      provider,
      model: config.agents.defaults.dream.modelOverride ?? model.model,
      maxTokens: model.maxTokens,
    })),
    '/skill': skillCommand(memory.skills),
  };
  // Sustained goals (/goal, create_goal, update_goal) and subagents (spawn): see goals.ts and subagents.ts.
  const defaults = config.agents.defaults;
  const goals = new Goals({
    sessions,
    limits: () => ({ maxRounds: defaults.goalMaxRounds, maxTokens: defaults.goalMaxTokens }),
  });
  for (const tool of createGoalTools(goals)) tools.register(tool);
  const subagents = buildSubagents(loaded, base, memory, () => loop, {
    makeRunner,
    model,
    provider,
    report: { mode: options.followUps ?? (options.bus ? 'bus' : 'loop'), bus },
    log,
  });
  tools.register(createSpawnTool(subagents));
  const loop = new AgentLoop({
    sessions,
    context,
    runner: makeRunner(model, provider),
    log,
    commands,
    consolidator: memory.consolidator,
    toolDefinitions: () => tools.definitions(),
    // `/model <preset>` switches one session; each preset's runner is built once, on first use.
    runnerFor: presetRunners(loaded, makeRunner, env, chain),
    models: modelCatalog(loaded, model),
    ...(options.restart ? { restart: options.restart } : {}),
    goals,
    work: [subagents, goals],
    sessionCommands: [goalCommand(goals), ...promptCommands(workspace), triggerCommand(workspace)],
    // nanobot's per-day usage file, which the WebUI's usage panel reads (GET /api/settings/usage).
    onUsage: (sessionKey, usage, llmCalls) =>
      recordTokenUsage(
        loaded.dataDir,
        sessionKey,
        { ...usage, requests: llmCalls },
        { timeZone: loaded.config.agents.defaults.timezone },
      ),
  });
  // Last, so nothing after it can fail and leave server processes behind.
  const mcp = await connectMcpServers(loaded, tools, base.network, env, log);
  const shutdown = agentShutdown(subagents, base.execSessions, mcp);
  const { consolidator } = memory;
  return { loop, model, provider, tools, sessions, bus, consolidator, subagents, shutdown, ...(mcp ? { mcp } : {}) };
}

interface SubagentWiring {
  makeRunner: MakeRunner;
  model: ModelSettings;
  provider: LLMProvider;
  report: { mode: FollowUpMode; bus: MessageBus };
  log: Logger;
}

/** Subagents run on the agent's model with their own registry (no spawn, no message) and report as follow-ups. */
function buildSubagents(
  loaded: LoadedConfig,
  base: BaseTools,
  memory: AgentMemory,
  loop: () => AgentLoop,
  wiring: SubagentWiring,
): SubagentManager {
  const { model, provider, makeRunner, log } = wiring;
  const defaults = loaded.config.agents.defaults;
  const subagentTools = subagentToolRegistry(base.tools, {
    maxResultChars: defaults.maxToolResultChars,
    spill: base.spill,
    secrets: base.secrets,
  });
  return new SubagentManager({
    sessions: memory.sessions,
    createRunner: ({ temperature }) =>
      makeRunner(temperature === undefined ? model : { ...model, temperature }, provider, subagentTools),
    systemPrompt: subagentSystemPrompt(loaded.workspace),
    maxConcurrent: defaults.maxConcurrentSubagents,
    taskMessage: (task, origin) => memory.context.buildUserMessage(task, origin),
    report: followUpSink(wiring.report.mode, wiring.report.bus, loop, log),
    log,
  });
}

/** Stops subagents first (they may hold exec sessions), then exec sessions and MCP servers, then stray shells. */
export function agentShutdown(
  subagents: Pick<SubagentManager, 'shutdown'>,
  execSessions: { shutdown(): Promise<void> },
  mcp: Pick<McpManager, 'close'> | undefined,
  killShells: () => void = killAllShellProcesses,
): () => Promise<void> {
  return async () => {
    await subagents.shutdown();
    await Promise.all([execSessions.shutdown(), mcp?.close()]);
    killShells();
  };
}
