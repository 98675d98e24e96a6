/**
 * The `providers.<name>` keys only some wire adapters read (nanobot's names): `apiType` (openai: chat completions or
 * the Responses API), `apiVersion` (Azure), `region` / `profile` (Bedrock) and `thinkingStyle` (how a custom endpoint
 * switches thinking on and off). They ride along in `ResolvedProvider.settings`; this reads them defensively.
 */
import { z } from 'zod';
import type { ProviderSettings } from './resolve.js';

export type ApiType = 'auto' | 'chat_completions' | 'responses';
export type ThinkingStyle = 'thinking_type' | 'enable_thinking' | 'reasoning_split';

export interface WireSettings {
  apiType: ApiType;
  apiVersion?: string;
  region?: string;
  profile?: string;
  thinkingStyle?: ThinkingStyle;
}

const optionalText = z
  .string()
  .nullish()
  .transform((value) => value?.trim() || undefined);

const WireSettingsSchema = z.object({
  // The config schema already rejects other values; anything odd here means "auto".
  apiType: z.enum(['auto', 'chat_completions', 'responses']).nullish().catch(undefined),
  apiVersion: optionalText.catch(undefined),
  region: optionalText.catch(undefined),
  profile: optionalText.catch(undefined),
  thinkingStyle: z.enum(['thinking_type', 'enable_thinking', 'reasoning_split']).nullish().catch(undefined),
});

export function wireSettings(settings: ProviderSettings): WireSettings {
  const parsed = WireSettingsSchema.parse(settings);
  return {
    apiType: parsed.apiType ?? 'auto',
    ...(parsed.apiVersion ? { apiVersion: parsed.apiVersion } : {}),
    ...(parsed.region ? { region: parsed.region } : {}),
    ...(parsed.profile ? { profile: parsed.profile } : {}),
    ...(parsed.thinkingStyle ? { thinkingStyle: parsed.thinkingStyle } : {}),
  };
}
