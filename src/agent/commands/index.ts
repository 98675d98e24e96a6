export { builtinCommands } from './builtin.js';
export { MODEL_PRESET_KEY, memoizeByPreset, modelForSession, sessionPreset } from './model.js';
export { CommandRouter, parseCommand, type RouteMatch } from './router.js';
export { recordUsage, sumUsage, type TokenStats, tokenStats } from './token-stats.js';
export type {
  Command,
  CommandContext,
  CommandResult,
  CommandTier,
  CommandTurn,
  LoopRuntime,
  ModelCatalog,
  SessionWork,
  SlashCommand,
} from './types.js';
export { fromSlashCommand } from './types.js';
