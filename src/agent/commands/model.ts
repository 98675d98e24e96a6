/** /model [preset]: shows the session's model, or switches this session (only) to a preset. */
import type { ModelSettings } from '../../config/model.js';
import type { Session } from '../../session/types.js';
import type { Command, ModelCatalog } from './types.js';

/** The session-only preset choice; nanobot's key. Not written to the config. */
export const MODEL_PRESET_KEY = 'model_preset';
const DEFAULT_PRESET = 'default';

export function sessionPreset(session: Session): string | undefined {
  const value = session.metadata[MODEL_PRESET_KEY];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The model this session's turns use: its preset when the catalog still has it, else the default. */
export function modelForSession(catalog: ModelCatalog, session: Session): ModelSettings {
  const preset = sessionPreset(session);
  return (preset !== undefined ? catalog.presets[preset] : undefined) ?? catalog.default;
}

/** Builds each preset's runner once (`runnerFor` in src/app/agent.ts): a runner is reused by every turn that needs it. */
export function memoizeByPreset<T>(build: (preset: string) => T): (preset: string) => T {
  const cache = new Map<string, T>();
  return (preset) => {
    let value = cache.get(preset);
    if (value === undefined) {
      value = build(preset);
      cache.set(preset, value);
    }
    return value;
  };
}

export const modelCommand: Command = {
  name: '/model',
  usage: '/model [preset]',
  description: 'show the model, or switch this conversation to a preset (`default` goes back)',
  tier: 'prefix',
  async run(ctx) {
    const catalog = ctx.runtime.models();
    const session = await ctx.session();
    if (!catalog) return 'Model presets are not available here.';
    const names = [DEFAULT_PRESET, ...Object.keys(catalog.presets)];
    const wanted = ctx.args.split(/\s+/, 1)[0] ?? '';
    if (!wanted) {
      const current = modelForSession(catalog, session);
      const active = sessionPreset(session) ?? DEFAULT_PRESET;
      const list = names.map((name) => {
        const settings = name === DEFAULT_PRESET ? catalog.default : catalog.presets[name];
        const marker = name === active ? ' (current)' : '';
        return `- ${name}: ${settings?.model ?? '?'}${marker}`;
      });
      return [`Model: ${current.model} (provider ${current.provider})`, 'Presets:', ...list].join('\n');
    }
    if (wanted === DEFAULT_PRESET) {
      delete session.metadata[MODEL_PRESET_KEY];
      await ctx.sessions.save(session);
      return `This conversation now uses the default model: ${catalog.default.model}.`;
    }
    const preset = catalog.presets[wanted];
    if (!preset) return `Unknown preset "${wanted}". Available: ${names.join(', ')}.`;
    session.metadata[MODEL_PRESET_KEY] = wanted;
    await ctx.sessions.save(session);
    return `This conversation now uses preset "${wanted}": ${preset.model} (provider ${preset.provider}).`;
  },
};
