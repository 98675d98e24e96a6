/**
 * Picks the provider for a model, following nanobot's `Config._match_provider` (facts §7):
 *   1. an explicit provider wins (built-in or a named custom one);
 *   2. with "auto": a. a model prefix naming a built-in (if usable), b. a prefix naming a custom provider,
 *      c. model-name keywords in registry order, d. a local server with apiBase, e. the first provider with a key
 *      (gateways first; keys from config before keys from the environment), f. a custom provider with apiBase.
 * Unlike nanobot, an explicit prefix is never second-guessed by keywords: `groq/qwen3-32b` without a Groq key goes
 * to a gateway or fails naming Groq, it does not land on DashScope because the name contains "qwen".
 * Keys come from `providers.<name>.apiKey`, else from the vendor's environment variable.
 * Every result says which rule picked it (`reason`), for `nanobot status` and `nanobot doctor`.
 */

import { snakeToCamel } from '../config/keys.js';
import {
  customSpec,
  findSpec,
  isPrefixOf,
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
  /** Keys only some adapters read (`apiType`, `apiVersion`, `region`…): see wire-settings.ts. */
  [key: string]: unknown;
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

/** The resolution rule that picked a provider (nanobot §7 numbering in the comments). */
export type ResolveRule =
  | 'explicit' // 1
  | 'model-prefix' // 2a
  | 'custom-prefix' // 2b
  | 'keyword' // 2c
  | 'gateway-for-prefix' // 2a without a key: a gateway that has one serves the prefixed model
  | 'local-server' // 2d
  | 'first-key' // 2e
  | 'custom-endpoint'; // 2f

export interface ResolveReason {
  rule: ResolveRule;
  /** One sentence for people: "model name contains "claude" (an anthropic keyword)". */
  detail: string;
}

/** Where the API key came from: `config`, an environment variable name (`$ANTHROPIC_API_KEY`), or none. */
export type KeySource = 'config' | `$${string}` | 'none';

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
  /** Why this provider was picked. Optional so hand-built values (tests, SDK users) need not invent one. */
  reason?: ResolveReason;
  keySource?: KeySource;
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
  /** The variable `envKeyValue` came from. */
  envKeyName?: string;
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
    const reason: ResolveReason = { rule: 'explicit', detail: `provider "${requested}" is set explicitly` };
    const spec = findSpec(requested);
    if (spec) return this.finish(this.builtin(spec), reason);
    const custom = this.customs.find((c) => normalizeProviderName(c.name) === normalizeProviderName(requested));
    if (custom) return this.finish(custom, reason);
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
    const prefix = slash > 0 ? lower.slice(0, slash) : '';
    const all = PROVIDERS.map((spec) => this.builtin(spec));

    // a. "deepseek/…", "ollama/…": the prefix names a built-in. It is what the user asked for: keywords, local
    // servers and custom endpoints never override it; only a gateway (which routes any model) may stand in.
    const byPrefix = prefix ? all.find((c) => isPrefixOf(c.spec, prefix)) : undefined;
    if (byPrefix) {
      const reason = { rule: 'model-prefix', detail: `model prefix "${prefix}/" names ${byPrefix.name}` } as const;
      if (byPrefix.spec.kind !== 'standard' && byPrefix.spec.kind !== 'gateway') return this.finish(byPrefix, reason);
      if (this.keyOf(byPrefix)) return this.finish(byPrefix, reason);
      // "openrouter/…" means OpenRouter's model ids: another gateway would not know them.
      const gateway =
        byPrefix.spec.kind === 'gateway' ? undefined : this.firstWithKey(all.filter((c) => c.spec.kind === 'gateway'));
      if (gateway) {
        return this.finish(gateway, {
          rule: 'gateway-for-prefix',
          detail: `${byPrefix.name} (named by the prefix "${prefix}/") has no API key; the gateway ${gateway.name} has one`,
        });
      }
      return this.missingKey(byPrefix);
    }

    // b. "myproxy/…": the prefix names a custom provider.
    const customByPrefix = prefix
      ? this.customs.find((c) => normalizeProviderName(c.name) === normalizeProviderName(prefix))
      : undefined;
    if (customByPrefix) {
      return this.finish(customByPrefix, {
        rule: 'custom-prefix',
        detail: `model prefix "${prefix}/" names the custom provider ${customByPrefix.name}`,
      });
    }

    // c. Keywords in registry order ("claude" → anthropic, "qwen" → dashscope, …).
    // The provider the model name points at, when it lacks a key: the most useful thing to name in the error.
    let wanted: Candidate | undefined;
    for (const c of all) {
      const keyword = matchingKeyword(c.spec, lower);
      if (keyword === undefined) continue;
      const reason = {
        rule: 'keyword',
        detail: `model name contains "${keyword.replace(/^\^/, '')}" (a ${c.name} keyword)`,
      } as const;
      const kind = c.spec.kind;
      if (kind === 'oauth') return this.finish(c, reason);
      if (kind === 'local' || kind === 'direct') {
        if (c.configuredBase || (kind === 'direct' && c.configKey)) return this.finish(c, reason);
        continue;
      }
      if (this.keyOf(c)) return this.finish(c, reason);
      wanted ??= c;
    }

    // d. A local server the user pointed us at.
    const local = all.find((c) => c.spec.kind === 'local' && c.configuredBase);
    if (local) {
      return this.finish(local, {
        rule: 'local-server',
        detail: `no prefix or keyword matched; ${local.name} has an apiBase configured`,
      });
    }

    // e. The first provider with a key: configured keys first, so an unrelated exported key does not win.
    const withKey = this.firstWithKey(
      all.filter((c) => c.spec.kind !== 'oauth' && !c.spec.unsupported && this.usable(c)),
    );
    if (withKey) {
      const source = withKey.configKey ? 'in the config' : `in $${withKey.envKeyName}`;
      return this.finish(withKey, {
        rule: 'first-key',
        detail: `no prefix or keyword matched a provider with a key; ${withKey.name} is the first with a key (${source})`,
      });
    }

    // f. Any custom endpoint.
    const custom = [...all.filter((c) => c.spec.name === 'custom'), ...this.customs].find((c) => c.configuredBase);
    if (custom) {
      return this.finish(custom, {
        rule: 'custom-endpoint',
        detail: `nothing else matched; ${custom.name} has an apiBase configured`,
      });
    }

    if (wanted) return this.missingKey(wanted);
    return {
      error: `No LLM provider is configured for model "${this.model}".`,
      hint:
        `Set an API key, e.g. providers.anthropic.apiKey in ${this.configPath} or export ANTHROPIC_API_KEY ` +
        '(OPENROUTER_API_KEY, OPENAI_API_KEY, DEEPSEEK_API_KEY … work too).',
    };
  }

  /** Registry order, but a key written in the config beats one that merely sits in the environment. */
  private firstWithKey(candidates: Candidate[]): Candidate | undefined {
    return candidates.find((c) => c.configKey) ?? candidates.find((c) => c.envKeyValue);
  }

  private builtin(spec: ProviderSpec): Candidate {
    const entry = Object.entries(this.input.providers).find(([key]) => normalizeProviderName(key) === spec.name);
    return this.candidate(spec, entry?.[1] ?? {});
  }

  private candidate(spec: ProviderSpec, settings: ProviderSettings): Candidate {
    const envNames = [spec.envKey, ...(spec.envKeyAliases ?? [])].filter((n): n is string => Boolean(n));
    const envKeyName = envNames.find((n) => nonEmpty(this.input.env[n]));
    return {
      name: spec.name,
      spec,
      settings,
      configKey: nonEmpty(settings.apiKey),
      ...(envKeyName ? { envKeyName, envKeyValue: nonEmpty(this.input.env[envKeyName]) } : {}),
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

  private finish(c: Candidate, reason: ResolveReason): Outcome {
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
    const keySource: KeySource = c.configKey ? 'config' : c.envKeyName ? `$${c.envKeyName}` : 'none';
    return {
      name: c.name,
      spec: c.spec,
      wire: c.spec.wire,
      ...(apiKey ? { apiKey } : {}),
      apiBase,
      model: this.model,
      upstreamModel: upstreamModelName(c.spec.modelName, this.model),
      settings: c.settings,
      reason,
      keySource,
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

/** Keyword match as nanobot does it (substring of the model name, `-` and `_` interchangeable); the keyword found. */
function matchingKeyword(spec: ProviderSpec, modelLower: string): string | undefined {
  const normalized = modelLower.replace(/-/g, '_');
  const bare = modelLower.slice(modelLower.lastIndexOf('/') + 1);
  return spec.keywords.find((kw) => {
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
