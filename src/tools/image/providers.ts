/**
 * The image providers by name (`tools.imageGeneration.provider`), and how each one's settings are found: the
 * `providers.<name>` block chat uses too (apiKey, apiBase, extraHeaders, extraBody, proxy), the key falling back to
 * the vendor's environment variable as it does for chat.
 */
import { findSpec, normalizeProviderName } from '../../providers/registry.js';
import type { ClientContext, ImageClient } from './common.js';
import { aihubmixClient, openrouterClient } from './gateways.js';
import { geminiClient } from './gemini.js';
import { codexClient, customClient, openaiClient } from './openai.js';
import { minimaxClient, modelscopeClient, ollamaClient, stepfunClient, zhipuClient } from './regional.js';

export const IMAGE_PROVIDERS: Readonly<Record<string, (ctx: ClientContext) => ImageClient>> = {
  openrouter: openrouterClient,
  openai: openaiClient,
  openai_codex: codexClient,
  custom: customClient,
  aihubmix: aihubmixClient,
  minimax: minimaxClient,
  gemini: geminiClient,
  ollama: ollamaClient,
  stepfun: stepfunClient,
  zhipu: zhipuClient,
  modelscope: modelscopeClient,
};

/** Providers that work without an API key (a local server, a sign-in, an unauthenticated endpoint). */
const KEYLESS = new Set(['ollama', 'custom', 'openai_codex']);

/** `openai-codex`, `openaiCodex` and `codex` all mean openai_codex; undefined for an unknown provider. */
export function imageProviderName(name: string): string | undefined {
  const normalized = normalizeProviderName(name.trim());
  const wanted = normalized === 'codex' ? 'openai_codex' : normalized;
  return Object.hasOwn(IMAGE_PROVIDERS, wanted) ? wanted : undefined;
}

export interface ImageProviderSettings {
  name: string;
  apiKey?: string;
  /** Where the key came from: the config, `$VAR`, or none. */
  keySource: 'config' | `$${string}` | 'none';
  keyRequired: boolean;
  apiBase?: string;
  extraHeaders: Record<string, string>;
  extraBody: Record<string, unknown>;
  proxy?: string;
}

type Block = Record<string, unknown>;
const text = (value: unknown) => (typeof value === 'string' && value.trim() ? value.trim() : undefined);
const stringMap = (value: unknown): Record<string, string> =>
  value && typeof value === 'object' && !Array.isArray(value)
    ? Object.fromEntries(
        Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
      )
    : {};

export function imageProviderSettings(
  name: string,
  providers: Record<string, Block>,
  env: Record<string, string | undefined>,
): ImageProviderSettings {
  const block = Object.entries(providers).find(([key]) => normalizeProviderName(key) === name)?.[1] ?? {};
  const spec = findSpec(name);
  const envName = [spec?.envKey, ...(spec?.envKeyAliases ?? [])].find((n): n is string => Boolean(n && text(env[n])));
  const configKey = text(block.apiKey);
  const apiKey = configKey ?? (envName ? text(env[envName]) : undefined);
  const apiBase = text(block.apiBase);
  const proxy = text(block.proxy);
  const extraBody = block.extraBody && typeof block.extraBody === 'object' ? (block.extraBody as Block) : {};
  return {
    name,
    ...(apiKey ? { apiKey } : {}),
    keySource: configKey ? 'config' : envName ? `$${envName}` : 'none',
    keyRequired: !KEYLESS.has(name),
    ...(apiBase ? { apiBase } : {}),
    extraHeaders: stringMap(block.extraHeaders),
    extraBody: { ...extraBody },
    ...(proxy ? { proxy } : {}),
  };
}
