/** `onboard --wizard`: asks for provider, API key and model with @clack/prompts. */
import { cancel, intro, isCancel, outro, password, select, text } from '@clack/prompts';
import { PROVIDERS, type ProviderSpec } from '../providers/registry.js';

export interface WizardAnswers {
  provider: string;
  model: string;
  apiKey?: string;
  apiBase?: string;
}

const SUGGESTED_MODELS: Record<string, string> = {
  anthropic: 'anthropic/claude-opus-4-5',
  openai: 'gpt-5',
  openrouter: 'anthropic/claude-opus-4-5',
  deepseek: 'deepseek-chat',
  gemini: 'gemini-2.5-pro',
  ollama: 'llama3.2',
};

export async function runWizard(): Promise<WizardAnswers | undefined> {
  intro('nanobot setup');
  const provider = await select({
    message: 'Which LLM provider?',
    options: wizardProviders().map((p) => ({ value: p.name, label: p.label, hint: p.name })),
    initialValue: 'anthropic',
  });
  if (isCancel(provider)) return stop();
  const spec = PROVIDERS.find((p) => p.name === provider);

  let apiBase: string | undefined;
  if (!spec?.defaultApiBase || spec.kind === 'local') {
    const base = await text({
      message: 'API base URL',
      placeholder: 'http://localhost:8000/v1',
      ...(spec?.defaultApiBase ? { initialValue: spec.defaultApiBase } : {}),
      validate: (v) => (v && /^https?:\/\//.test(v) ? undefined : 'Enter an http(s) URL'),
    });
    if (isCancel(base)) return stop();
    apiBase = base;
  }

  let apiKey: string | undefined;
  const keyMessage = spec ? keyQuestion(spec) : `API key for ${provider}`;
  if (keyMessage) {
    const key = await password({ message: keyMessage });
    if (isCancel(key)) return stop();
    apiKey = key.trim() || undefined;
  }

  const model = await text({
    message: 'Model',
    initialValue: SUGGESTED_MODELS[provider] ?? '',
    validate: (v) => (v?.trim() ? undefined : 'Enter a model name'),
  });
  if (isCancel(model)) return stop();
  outro('Saved. Try: nanobot agent -m "Hello"');
  return { provider, model: model.trim(), ...(apiKey ? { apiKey } : {}), ...(apiBase ? { apiBase } : {}) };
}

/** Each provider once: entries that are aliases of another (same label, e.g. OpenCode Zen) are left out. */
export function wizardProviders(): ProviderSpec[] {
  const labels = new Set<string>();
  return PROVIDERS.filter((p) => {
    if (p.unsupported || labels.has(p.label)) return false;
    labels.add(p.label);
    return true;
  });
}

/**
 * What to ask for the key, or undefined when there is none to give (OAuth signs in with `nanobot provider login`).
 * Endpoints the user names (Custom, local servers) may want a key too: asked, and an empty answer is fine.
 */
export function keyQuestion(spec: ProviderSpec): string | undefined {
  if (spec.kind === 'oauth') return undefined;
  const empty = spec.envKey
    ? ` (leave empty to use $${spec.envKey})`
    : spec.keyRequired
      ? ''
      : ' (leave empty if the endpoint needs none)';
  return `API key for ${spec.label}${empty}`;
}

function stop(): undefined {
  cancel('Setup cancelled; nothing was changed.');
  return undefined;
}
