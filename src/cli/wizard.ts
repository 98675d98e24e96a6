/** `onboard --wizard`: asks for provider, API key and model with @clack/prompts. */
import { cancel, intro, isCancel, outro, password, select, text } from '@clack/prompts';
import { PROVIDERS } from '../providers/registry.js';

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
    options: PROVIDERS.filter((p) => !p.unsupported).map((p) => ({ value: p.name, label: p.label, hint: p.name })),
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
  if (spec?.keyRequired !== false) {
    const key = await password({
      message: `API key for ${spec?.label ?? provider}${spec?.envKey ? ` (leave empty to use $${spec.envKey})` : ''}`,
    });
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

function stop(): undefined {
  cancel('Setup cancelled; nothing was changed.');
  return undefined;
}
