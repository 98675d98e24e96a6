/** The agent's memory: sessions, history, skills, the context builder, the consolidator, and the /dream commands. */
import { ContextBuilder } from '../agent/context.js';
import type { SlashCommand } from '../agent/loop.js';
import { AgentRunner } from '../agent/runner.js';
import type { LoadedConfig } from '../config/load.js';
import type { ModelSettings } from '../config/model.js';
import { Consolidator } from '../memory/consolidator.js';
import { HistoryStore } from '../memory/history.js';
import type { LLMProvider } from '../providers/types.js';
import { JsonlSessionStore } from '../session/jsonl-store.js';
import { sessionsDirFor } from '../session/location.js';
import { type SkillsLoader, skillsLoaderFor } from '../skills/loader.js';
import type { Logger } from '../util/log.js';
import { BUILTIN_SKILLS, WORKSPACE_TEMPLATES } from '../util/paths.js';

export interface AgentMemory {
  sessions: JsonlSessionStore;
  history: HistoryStore;
  skills: SkillsLoader;
  context: ContextBuilder;
  consolidator: Consolidator;
}

export async function buildMemory(
  loaded: LoadedConfig,
  provider: LLMProvider,
  model: ModelSettings,
  env: NodeJS.ProcessEnv,
  log: Logger,
): Promise<AgentMemory> {
  const { config, workspace } = loaded;
  const sessions = new JsonlSessionStore(await sessionsDirFor(loaded.dataDir, workspace, { log }), log);
  const history = new HistoryStore(workspace, { timezone: config.agents.defaults.timezone, log });
  const skills = skillsLoaderFor(loaded, env, BUILTIN_SKILLS);
  const context = new ContextBuilder({
    workspace,
    templatesDir: WORKSPACE_TEMPLATES,
    timezone: config.agents.defaults.timezone,
    history,
    skills,
    unifiedSession: config.agents.defaults.unifiedSession,
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
  return { sessions, history, skills, context, consolidator };
}

type DreamModules = typeof import('../memory/dream-commands.js') & { dream: import('../memory/dream.js').Dream };

/** /dream, /dream-log, /dream-restore. Dream and git load on first use: most turns never need them. */
export function dreamCommands(
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
