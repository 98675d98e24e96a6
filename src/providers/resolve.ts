/**
 * Picks the provider for a model, following nanobot's `Config._match_provider` (facts §7):
 *   1. an explicit provider wins (built-in or a named custom one);
 *   2. with "auto": a. a model prefix naming a built-in (if usable), b. a prefix naming a custom provider,
 *      c. model-name keywords in registry order, d. a local server with apiBase, e. the first provider with a key
 *      (gateways first; keys from config before keys from the environment), f. a custom provider with apiBase.
 * Keys come from `providers.<name>.apiKey`, else from the vendor's environment variable.
 */

import { snakeToCamel } from '../config/keys.js';
import {
  customSpec,
  findSpec,
  normalizeProviderName,
  PROVIDERS,
  type ProviderSpec,
  upstreamModelName,
  type WireApi,
} from './registry.js';

/** One `providers.<name>` block of the config (camelCase fields). */
export interface ProviderSettings {
  apiKey?: string;
  apiBase?: string;
  extraHeaders?: Record<string, string>;
  extraBody?: Record<string, unknown>;
  extraQuery?: Record<string, string>;
}

export interface ResolveInput {
  model: string;
  /** "auto" or a provider name. */
  provider: string;
  providers: Record<string, ProviderSettings>;
  env: Record<string, string | undefined>;
  /** Shown in hints; defaults to ~/.nanobot/config.json. */
  configPath?: string;
}

export interface ResolvedProvider {
  /** Registry name, or the user's name for a custom provider. */
  name: string;
  spec: ProviderSpec;
  wire: WireApi;
  apiKey?: string;
  apiBase: string;
  /** The configured model name. */
  model: string;
  /** The model name sent upstream (prefix rules applied). */
  upstreamModel: string;
  settings: ProviderSettings;
}

export interface ResolveError {
  error: string;
  hint: string;
}

export function isResolveError(value: ResolvedProvider | ResolveError): value is ResolveError {
  return 'error' in value;
}

type Outcome = ResolvedProvider | ResolveError;

/** Everything known about one provider while resolving. */
interface Candidate {
  name: string;
  spec: ProviderSpec;
  settings: ProviderSettings;
  configKey?: string;
  envKeyValue?: string;
  configuredBase?: string;
}

export function resolveProvider(input: ResolveInput): Outcome {
  const context = new ResolveContext(input);
  const requested = input.provider.trim();
  if (requested && requested.toLowerCase() !== 'auto') return context.resolveExplicit(requested);
  return context.resolveAuto();
}

/** Config blocks that hold credentials for something other than chat (nanobot: voice transcription). */
const NOT_CHAT_PROVIDERS = new Set(['assemblyai']);

const nonEmpty = (value: string | undefined): string | undefined => (value?.trim() ? value.trim() : undefined);

class ResolveContext {
  private readonly model: string;
  private readonly configPath: string;
  /** Named custom providers: config keys that are not built-in names. */
  private readonly customs: Candidate[];

  constructor(private readonly input: ResolveInput) {
    this.model = input.model.trim();
    this.configPath = input.configPath ?? '~/.nanobot/config.json';
    this.customs = Object.entries(input.providers)
      .filter(([key]) => !findSpec(key) && !NOT_CHAT_PROVIDERS.has(normalizeProviderName(key)))
      .map(([key, settings]) => this.candidate(customSpec(key), settings ?? {}));
  }

  resolveExplicit(requested: string): Outcome {
    const spec = findSpec(requested);
    if (spec) return this.finish(this.builtin(spec));
    const custom = this.customs.find((c) => normalizeProviderName(c.name) === normalizeProviderName(requested));
    if (custom) return this.finish(custom);
    const close = suggestNames(requested, [...PROVIDERS.map((s) => s.name), ...this.customs.map((c) => c.name)]);
    return {
      error: `Unknown provider "${requested}".`,
      hint: close.length
        ? `Did you mean ${close.map((n) => `"${n}"`).join(' or ')}? Use "auto" to pick one from the model name.`
        : `Use "auto", a built-in provider name, or add a custom OpenAI-compatible endpoint as providers.${requested}.apiBase in ${this.configPath}.`,
    };
  }

  resolveAuto(): Outcome {
    const lower = this.model.toLowerCase();
    const slash = lower.indexOf('/');
    const prefix = slash > 0 ? normalizeProviderName(lower.slice(0, slash)) : '';
    const all = PROVIDERS.map((spec) => this.builtin(spec));
    // The provider the model name points at, when it lacks a key: the most useful thing to name in the error.
    let wanted: Candidate | undefined;

    // a. "deepseek/…", "ollama/…": the prefix names a built-in.
    const byPrefix = prefix ? all.find((c) => c.spec.name === prefix) : undefined;
    if (byPrefix) {
      if (byPrefix.spec.kind !== 'standard' && byPrefix.spec.kind !== 'gateway') return this.finish(byPrefix);
      if (this.keyOf(byPrefix)) return this.finish(byPrefix);
      wanted = byPrefix;
    }

    // b. "myproxy/…": the prefix names a custom provider.
    const customByPrefix = prefix ? this.customs.find((c) => normalizeProviderName(c.name) === prefix) : undefined;
    if (customByPrefix) return this.finish(customByPrefix);

    // c. Keywords in registry order ("claude" → anthropic, "qwen" → dashscope, …).
    for (const c of all) {
      if (!matchesKeyword(c.spec, lower)) continue;
      const kind = c.spec.kind;
      if (kind === 'oauth') return this.finish(c);
      if (kind === 'local' || kind === 'direct') {
        if (c.configuredBase || (kind === 'direct' && c.configKey)) return this.finish(c);
        continue;
      }
      if (this.keyOf(c)) return this.finish(c);
      wanted ??= c;
    }

    // d. A local server the user pointed us at.
    const local = all.find((c) => c.spec.kind === 'local' && c.configuredBase);
    if (local) return this.finish(local);

    // e. The first provider with a key: configured keys first, so an unrelated exported key does not win.
    const fallbackable = all.filter((c) => c.spec.kind !== 'oauth' && !c.spec.unsupported && this.usable(c));
    const withKey = fallbackable.find((c) => c.configKey) ?? fallbackable.find((c) => c.envKeyValue);
    if (withKey) return this.finish(withKey);

    // f. Any custom endpoint.
    const custom = [...all.filter((c) => c.spec.name === 'custom'), ...this.customs].find((c) => c.configuredBase);
    if (custom) return this.finish(custom);

    if (wanted) return this.missingKey(wanted);
    return {
      error: `No LLM provider is configured for model "${this.model}".`,
      hint:
        `Set an API key, e.g. providers.anthropic.apiKey in ${this.configPath} or export ANTHROPIC_API_KEY ` +
        '(OPENROUTER_API_KEY, OPENAI_API_KEY, DEEPSEEK_API_KEY … work too).',
    };
  }

  private builtin(spec: ProviderSpec): Candidate {
    const entry = Object.entries(this.input.providers).find(([key]) => normalizeProviderName(key) === spec.name);
    return this.candidate(spec, entry?.[1] ?? {});
  }

  private candidate(spec: ProviderSpec, settings: ProviderSettings): Candidate {
    const envNames = [spec.envKey, ...(spec.envKeyAliases ?? [])].filter((n): n is string => Boolean(n));
    return {
      name: spec.name,
      spec,
      settings,
      configKey: nonEmpty(settings.apiKey),
      envKeyValue: envNames.map((n) => nonEmpty(this.input.env[n])).find(Boolean),
      configuredBase: nonEmpty(settings.apiBase),
    };
  }

  private keyOf(c: Candidate): string | undefined {
    return c.configKey ?? c.envKeyValue;
  }

  /** Can this provider serve a request as configured? (A fallback must not pick one that would fail.) */
  private usable(c: Candidate): boolean {
    if (!c.configuredBase && !c.spec.defaultApiBase) return false;
    return !c.spec.keyRequired || Boolean(this.keyOf(c));
  }

  private finish(c: Candidate): Outcome {
    const configName = snakeToCamel(c.name);
    if (c.spec.unsupported) {
      return {
        error: `Provider "${c.name}" (${c.spec.label}) is not supported yet.`,
        hint: c.spec.unsupported,
      };
    }
    const apiBase = c.configuredBase ?? c.spec.defaultApiBase;
    if (!apiBase) {
      return {
        error: `Provider "${c.name}" needs an API base URL.`,
        hint: `Set providers.${configName}.apiBase in ${this.configPath} (e.g. "${
          c.spec.kind === 'local' ? 'http://localhost:8000/v1' : 'https://my-endpoint.example.com/v1'
        }").`,
      };
    }
    const apiKey = this.keyOf(c);
    if (c.spec.keyRequired && !apiKey) return this.missingKey(c);
    return {
      name: c.name,
      spec: c.spec,
      wire: c.spec.wire,
      ...(apiKey ? { apiKey } : {}),
      apiBase,
      model: this.model,
      upstreamModel: upstreamModelName(c.spec.modelName, this.model),
      settings: c.settings,
    };
  }

  private missingKey(c: Candidate): ResolveError {
    const where = `Set providers.${snakeToCamel(c.name)}.apiKey in ${this.configPath}`;
    return {
      error: `No API key for provider "${c.name}".`,
      hint: c.spec.envKey ? `${where} or export ${c.spec.envKey}.` : `${where}.`,
    };
  }
}

/** Keyword match as nanobot does it: substring of the model name, `-` and `_` interchangeable. */
function matchesKeyword(spec: ProviderSpec, modelLower: string): boolean {
  const normalized = modelLower.replace(/-/g, '_');
  const bare = modelLower.slice(modelLower.lastIndexOf('/') + 1);
  return spec.keywords.some((kw) => {
    if (kw.startsWith('^')) return bare.startsWith(kw.slice(1));
    return modelLower.includes(kw) || normalized.includes(kw.replace(/-/g, '_'));
  });
}

/** Names within a small edit distance, or sharing a prefix, for "did you mean". */
function suggestNames(requested: string, names: readonly string[]): string[] {
  const target = normalizeProviderName(requested);
  const scored = names
    .map((name) => ({ name, distance: editDistance(target, normalizeProviderName(name)) }))
    .filter(
      ({ name, distance }) =>
        distance <= Math.max(2, Math.floor(target.length / 3)) ||
        (target.length >= 3 && normalizeProviderName(name).startsWith(target)),
    )
    .sort((a, b) => a.distance - b.distance);
  return [...new Set(scored.map((s) => s.name))].slice(0, 3);
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
