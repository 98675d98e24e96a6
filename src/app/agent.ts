/**
 * Wires an AgentLoop from a loaded config: provider, tools, sessions, context. Shared by every surface.
 */
import { join } from 'node:path';
import type { Agent } from '../agent/agent.js';
import { goalCommand } from '../agent/commands/goal.js';
import { type ModelCatalog, memoizeByPreset } from '../agent/commands/index.js';
import { skillCommand } from '../agent/commands/skill.js';
import { ContextBuilder } from '../agent/context.js';
import { type FollowUpMode, followUpSink } from '../agent/follow-ups.js';
import { Goals } from '../agent/goals.js';
import { AgentLoop, type SlashCommand } from '../agent/loop.js';
import { AgentRunner } from '../agent/runner.js';
import { SubagentManager, subagentSystemPrompt, subagentToolRegistry } from '../agent/subagents.js';
import { MessageBus } from '../bus/message-bus.js';
import type { LoadedConfig } from '../config/load.js';
import { effectiveModel, type ModelSettings } from '../config/model.js';
import { CronService } from '../cron/service.js';
import type { McpManager } from '../mcp/manager.js';
import { Consolidator } from '../memory/consolidator.js';
import { HistoryStore } from '../memory/history.js';
import { buildProvider, type ProviderChainOptions } from '../providers/chain.js';
import { CircuitBreakers } from '../providers/fallback.js';
import type { LLMProvider } from '../providers/types.js';
import { createNetworkPolicy, type NetworkPolicy } from '../security/network.js';
import { collectSecrets, secretsOf } from '../security/secrets.js';
import { createPathPolicy } from '../security/workspace.js';
import { JsonlSessionStore } from '../session/jsonl-store.js';
import { sessionsDirFor } from '../session/location.js';
import { skillsLoaderFor } from '../skills/loader.js';
import { createCronTool } from '../tools/cron.js';
import { killAllShellProcesses } from '../tools/exec-process.js';
import { createGoalTools } from '../tools/goal.js';
import { createDefaultTools, createExecSessionManager } from '../tools/index.js';
import { createMessageTool, type MessageTargetCheck } from '../tools/message.js';
import { ToolRegistry } from '../tools/registry.js';
import { ResultSpill } from '../tools/result-spill.js';
import { createSearchHistoryTool } from '../tools/search-history.js';
import { createSpawnTool } from '../tools/spawn.js';
import { createWebFetchTool, createWebSearchTool } from '../tools/web/index.js';
import { UserError } from '../util/errors.js';
import { type Logger, silentLogger } from '../util/log.js';
import { BUILTIN_SKILLS, WORKSPACE_TEMPLATES } from '../util/paths.js';

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

type DreamModules = typeof import('../memory/dream-commands.js') & { dream: import('../memory/dream.js').Dream };

/** /dream, /dream-log, /dream-restore. Dream and git load on first use: most turns never need them. */
function dreamCommands(
  workspace: string,
  history: HistoryStore,
  runOptions: () => { provider: LLMProvider; model: string; maxTokens: number },
): Record<string, SlashCommand> {
  let loaded: Promise<DreamModules> | undefined;
  const load = (): Promise<DreamModules> => {
    loaded ??= (async () => {
      const [{ Dream }, commands] = await Promise.all([
        import('../memory/dream.js'),
        import('../memory/dream-commands.js'),
      ]);
      return {
        ...commands,
        dream: new Dream({
          workspace,
          history: history.asDreamSource(),
          runner: (spec) => new AgentRunner(spec),
        }),
      };
    })();
    return loaded;
  };
  return {
    '/dream': {
      description: 'consolidate recent history into long-term memory now',
      run: async () => {
        const { dream, dreamCommand } = await load();
        return dreamCommand(dream, runOptions());
      },
    },
    '/dream-log': {
      description: 'list memory changes, or show one: /dream-log <sha>',
      run: async (sha) => {
        const { dream, dreamLogCommand } = await load();
        return dreamLogCommand(dream.git, sha);
      },
    },
    '/dream-restore': {
      description: 'undo a memory change: /dream-restore <sha>',
      run: async (sha) => {
        const { dream, dreamRestoreCommand } = await load();
        return dreamRestoreCommand(dream.git, sha);
      },
    },
  };
}

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

function networkPolicy(whitelist: string[]) {
  try {
    return createNetworkPolicy({ whitelist });
  } catch (err) {
    throw new UserError((err as Error).message, 'Write each entry as an address or CIDR, e.g. "100.64.0.0/10".');
  }
}

export async function createAgent(loaded: LoadedConfig, options: CreateAgentOptions = {}): Promise<Agent> {
  const { config, workspace } = loaded;
  const env = options.env ?? process.env;
  const log = options.log ?? silentLogger;
  const model = effectiveModel(config);
  const chain = { breakers: new CircuitBreakers(), log };
  const provider = providerFor(loaded, model, env, chain);

  const bus = options.bus ?? new MessageBus();
  const spill = new ResultSpill({ dir: join(workspace, '.nanobot', 'tool-results'), relativeTo: workspace });
  // Every tool result is masked against the configured secrets (and keys providers read from the environment, such
  // as OPENROUTER_API_KEY) before the model reads it.
  const envSecrets = collectSecrets(env);
  const secrets = () => [...secretsOf(config), ...envSecrets];
  const tools = new ToolRegistry({ maxResultChars: config.agents.defaults.maxToolResultChars, spill, secrets });
  const network = networkPolicy(config.tools.ssrfWhitelist);
  const execSessions = createExecSessionManager();
  const exec = config.tools.exec;
  for (const tool of createDefaultTools({
    workspace,
    restrictToWorkspace: config.tools.restrictToWorkspace,
    fileTools: config.tools.file.enable,
    exec: {
      enable: exec.enable,
      timeout: exec.timeout,
      pathPrepend: exec.pathPrepend,
      pathAppend: exec.pathAppend,
      allowedEnvKeys: exec.allowedEnvKeys,
      allowPatterns: exec.allowPatterns,
      denyPatterns: exec.denyPatterns,
      sandbox: exec.sandbox,
      sandboxNetwork: exec.sandboxNetwork,
      sandboxRoBinds: exec.sandboxRoBinds,
      sandboxRwBinds: exec.sandboxRwBinds,
      dataDir: loaded.dataDir,
    },
    sessions: execSessions,
    network,
    // Skills name their SKILL.md for the model to read, even when file tools are kept to the workspace; files users
    // send through chat channels arrive in <dataDir>/media and are named by path in their message.
    extraReadDirs: [BUILTIN_SKILLS, join(loaded.dataDir, 'media')],
  })) {
    tools.register(tool);
  }
  const web = config.tools.web;
  if (web.enable) {
    const userAgent = web.userAgent ?? undefined;
    const search = { ...web.search, apiKey: web.search.apiKey ?? undefined, baseUrl: web.search.baseUrl ?? undefined };
    tools.register(createWebSearchTool({ network, search, env, ...(userAgent ? { userAgent } : {}) }));
    const jinaKey = env.JINA_API_KEY;
    tools.register(
      createWebFetchTool({
        network,
        ...(userAgent ? { userAgent } : {}),
        jinaReader: web.fetch.useJinaReader && jinaKey ? { apiKey: jinaKey } : null,
      }),
    );
  }
  tools.register(
    createMessageTool({
      send: (message) => bus.publishOutbound(message),
      policy: createPathPolicy({ workspace, restrictToWorkspace: config.tools.restrictToWorkspace }),
      mediaDir: join(loaded.dataDir, 'media', 'outbound'),
      maxPerMinute: config.tools.maxSessionMessagesPerMinute,
      ...(options.messageTargets ? { allowTarget: options.messageTargets } : {}),
    }),
  );

  const sessions = new JsonlSessionStore(await sessionsDirFor(loaded.dataDir, workspace), log);
  const history = new HistoryStore(workspace, { timezone: config.agents.defaults.timezone, log });
  tools.register(createSearchHistoryTool({ history, sessions }));
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
  const skills = skillsLoaderFor(loaded, env, BUILTIN_SKILLS);
  const context = new ContextBuilder({
    workspace,
    templatesDir: WORKSPACE_TEMPLATES,
    timezone: config.agents.defaults.timezone,
    history,
    skills,
    log,
  });
  const consolidator = new Consolidator({
    provider,
    model: model.model,
    history,
    contextWindowTokens: model.contextWindowTokens,
    maxTokens: model.maxTokens,
    consolidationRatio: config.agents.defaults.consolidationRatio,
    persist: (session) => sessions.save(session),
    log,
  });
  const makeRunner = (m: ModelSettings, runnerProvider: LLMProvider, toolbox: ToolRegistry = tools) =>
    new AgentRunner({
      provider: runnerProvider,
      model: m.model,
      maxTokens: m.maxTokens,
      temperature: m.temperature,
      reasoningEffort: m.reasoningEffort,
      tools: toolbox,
      maxIterations: config.agents.defaults.maxToolIterations,
      contextWindowTokens: m.contextWindowTokens,
      maxToolResultChars: config.agents.defaults.maxToolResultChars,
      maxCallsPerResponse: config.tools.maxCallsPerResponse,
      turnTimeoutMs: config.agents.defaults.turnTimeoutS * 1000,
    });
  const runner = makeRunner(model, provider);
  // `/model <preset>` switches one session; each preset's runner is built once, on first use.
  const runnerFor = memoizeByPreset((preset) => {
    const m = effectiveModel(config, preset);
    return makeRunner(m, providerFor(loaded, m, env, chain));
  });
  const models = (): ModelCatalog => ({
    default: model,
    presets: Object.fromEntries(Object.keys(config.modelPresets).map((name) => [name, effectiveModel(config, name)])),
  });
  const commands = {
    ...dreamCommands(workspace, history, () => ({
      provider,
      model: config.agents.defaults.dream.modelOverride ?? model.model,
      maxTokens: model.maxTokens,
    })),
    '/skill': skillCommand(skills),
  };
  // Sustained goals (/goal, create_goal, update_goal) and subagents (spawn): see goals.ts and subagents.ts.
  const defaults = config.agents.defaults;
  const goals = new Goals({
    sessions,
    limits: () => ({ maxRounds: defaults.goalMaxRounds, maxTokens: defaults.goalMaxTokens }),
  });
  for (const tool of createGoalTools(goals)) tools.register(tool);
  const subagentTools = subagentToolRegistry(tools, { maxResultChars: defaults.maxToolResultChars, spill, secrets });
  const subagents: SubagentManager = new SubagentManager({
    sessions,
    createRunner: ({ temperature }) =>
      makeRunner(temperature === undefined ? model : { ...model, temperature }, provider, subagentTools),
    systemPrompt: subagentSystemPrompt(workspace),
    maxConcurrent: defaults.maxConcurrentSubagents,
    taskMessage: (task, origin) => context.buildUserMessage(task, origin),
    report: followUpSink(options.followUps ?? (options.bus ? 'bus' : 'loop'), bus, () => loop, log),
    log,
  });
  tools.register(createSpawnTool(subagents));
  const loop = new AgentLoop({
    sessions,
    context,
    runner,
    log,
    commands,
    consolidator,
    toolDefinitions: () => tools.definitions(),
    runnerFor,
    models,
    ...(options.restart ? { restart: options.restart } : {}),
    goals,
    work: [subagents, goals],
    sessionCommands: [goalCommand(goals)],
  });
  // Last, so nothing after it can fail and leave server processes behind.
  const mcp = await connectMcpServers(loaded, tools, network, env, log);
  const shutdown = async () => {
    await subagents.shutdown();
    await Promise.all([execSessions.shutdown(), mcp?.close()]);
    killAllShellProcesses();
  };
  return { loop, model, provider, tools, sessions, bus, consolidator, subagents, shutdown, ...(mcp ? { mcp } : {}) };
}
