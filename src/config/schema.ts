/**
 * nanobot's config tree (`~/.nanobot/config.json`) with nanobot's defaults.
 * Keys are camelCase here; the loader accepts snake_case and converts before validation.
 * Nested objects use `prefault({})` so their own defaults are filled in when the block is missing.
 * Objects are loose: keys this version does not know yet are kept, so a newer nanobot config survives a round trip.
 */
import { z } from 'zod';

// Schemas here and in tools are parsed a handful of times per process: compiling fast paths (zod's JIT) costs more
// start-up time than it ever saves.
z.config({ jitless: true });

const stringMap = z.record(z.string(), z.string());

/** `tools.maxCallsPerResponse` when the config does not set it (also the runner's default). */
export const DEFAULT_MAX_CALLS_PER_RESPONSE = 100;

const DreamSchema = z.looseObject({
  enabled: z.boolean().default(true),
  intervalH: z.number().positive().default(2),
  cron: z.string().nullish(),
  modelOverride: z.string().nullish(),
});

const FallbackModelSchema = z.looseObject({
  model: z.string().min(1),
  provider: z.string().default('auto'),
  maxTokens: z.int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
  reasoningEffort: z.string().nullish(),
});

/** USD per 1M tokens; `cached` (cache reads) and `cacheWrite` default to `input`. */
const ModelPriceSchema = z.looseObject({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  cached: z.number().nonnegative().optional(),
  cacheWrite: z.number().nonnegative().optional(),
});

export const AgentDefaultsSchema = z.looseObject({
  workspace: z.string().default('~/.nanobot/workspace'),
  modelPreset: z.string().nullable().default(null),
  model: z.string().min(1).default('anthropic/claude-opus-4-5'),
  provider: z.string().min(1).default('auto'),
  maxTokens: z.int().positive().default(8192),
  contextWindowTokens: z.int().positive().default(200_000),
  temperature: z.number().min(0).max(2).default(0.1),
  /** Tried in order when the model fails before answering: preset names, or inline `{model, provider}` objects. */
  fallbackModels: z.array(z.union([z.string().min(1), FallbackModelSchema])).default([]),
  maxToolIterations: z.int().positive().default(200),
  /**
   * Seconds one run of a turn (model calls and tools) may take before it is stopped with an error, so a turn that
   * hangs frees its concurrency slot; 0 = no limit. Not in nanobot (which has NANOBOT_LLM_TIMEOUT_S per request).
   */
  turnTimeoutS: z.number().nonnegative().default(3600),
  maxConcurrentSubagents: z.int().positive().default(1),
  /** Sustained goals (`/goal`): rounds and tokens a goal may use before it pauses; `/goal --rounds/--tokens` override. */
  goalMaxRounds: z.int().positive().default(20),
  goalMaxTokens: z.int().positive().default(2_000_000),
  failOnToolError: z.boolean().default(true),
  maxToolResultChars: z.int().positive().default(16_000),
  providerRetryMode: z.enum(['standard', 'persistent']).default('standard'),
  /** Optional price table by model name, for the session cost in /status. */
  modelPrices: z.record(z.string(), ModelPriceSchema).default({}),
  toolHintMaxLength: z.int().nonnegative().default(40),
  reasoningEffort: z.string().nullable().default(null),
  timezone: z.string().default('UTC'),
  /** `auto`: the system's zone replaces `timezone` on every load (prepare.ts); `manual`: `timezone` as written. */
  timezoneMode: z.enum(['auto', 'manual']).default('auto'),
  /** How the interactive chat names the agent (`🐈 nanobot: …`); `botIcon: ""` leaves the icon out (as in nanobot). */
  botName: z.string().default('nanobot'),
  botIcon: z.string().default('🐈'),
  unifiedSession: z.boolean().default(false),
  disabledSkills: z.array(z.string()).default([]),
  idleCompactAfterMinutes: z.number().nonnegative().default(15),
  idleCompactCheckIntervalSeconds: z.number().positive().default(60),
  consolidationRatio: z.number().gt(0).lt(1).default(0.5),
  dream: DreamSchema.prefault({}),
});

export const ModelPresetSchema = z.looseObject({
  model: z.string().min(1),
  provider: z.string().default('auto'),
  maxTokens: z.int().positive().optional(),
  contextWindowTokens: z.int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
  reasoningEffort: z.string().nullish(),
});

export const ProviderConfigSchema = z.looseObject({
  /** A custom provider's label in the WebUI's settings (the block's name otherwise). */
  displayName: z.string().nullish(),
  apiKey: z.string().nullish(),
  apiBase: z.string().nullish(),
  apiType: z.enum(['auto', 'chat_completions', 'responses']).optional(),
  extraHeaders: stringMap.nullish(),
  extraBody: z.record(z.string(), z.unknown()).nullish(),
  extraQuery: stringMap.nullish(),
  proxy: z.string().nullish(),
  thinkingStyle: z.string().nullish(),
  /** Azure OpenAI: the chat-completions `api-version` (default 2024-10-21). */
  apiVersion: z.string().nullish(),
  /** AWS Bedrock: region and credentials profile (default: the AWS credential chain). */
  region: z.string().nullish(),
  profile: z.string().nullish(),
});

/**
 * `channels.<name>`: the keys every chat channel shares; each channel validates its own keys when the gateway builds
 * it (src/channels/<name>/). Ids may be written as numbers (Telegram user ids usually are).
 */
const ChannelBlockSchema = z.looseObject({
  enabled: z.boolean().default(false),
  allowFrom: z.array(z.union([z.string(), z.number()]).transform(String)).default([]),
  /** Each channel checks its own values (src/channels/settings.ts); upstream's have others (NapCat: a probability). */
  groupPolicy: z.union([z.string(), z.number()]).optional(),
});

export const ChannelsSchema = z
  .looseObject({
    sendProgress: z.boolean().default(true),
    sendToolHints: z.boolean().default(true),
    showReasoning: z.boolean().default(true),
    sendMaxRetries: z.int().nonnegative().default(3),
    /** Seconds one channel start may take before it counts as failed (logged, retried with backoff). */
    startTimeout: z.number().positive().default(60),
    /** Deprecated upstream (read when `transcription.provider` / `.language` are unset). */
    transcriptionProvider: z.string().nullish(),
    transcriptionLanguage: z.string().nullish(),
    /** The WebSocket channel and the WebUI: on by default, on loopback, behind a token (README "WebUI" lists its keys). */
    websocket: ChannelBlockSchema.extend({
      enabled: z.boolean().default(true),
      allowFrom: z.array(z.string()).default(['*']),
      host: z.string().default('127.0.0.1'),
      port: z.int().min(0).max(65535).default(8765),
      token: z.string().default(''),
    }).prefault({}),
  })
  .catchall(z.union([ChannelBlockSchema, z.boolean(), z.number(), z.string()]));

/**
 * One MCP server (`tools.mcpServers.<name>`, Claude Desktop format): `command`/`args`/`env`/`cwd` for stdio, `url` +
 * `headers` for HTTP. `type` is auto-detected when missing (a url ending in /sse is SSE); `http` and
 * `streamable-http` are accepted spellings of `streamableHttp`. `toolTimeout` is in seconds.
 */
export const McpServerSchema = z.looseObject({
  // Any string is accepted: an unknown type fails that one server (shown in `nanobot status`), not the whole config.
  type: z.union([z.enum(['stdio', 'sse', 'streamableHttp', 'http', 'streamable-http']), z.string()]).nullish(),
  command: z.string().nullish(),
  args: z.array(z.string()).default([]),
  env: stringMap.default({}),
  cwd: z.string().nullish(),
  url: z.string().nullish(),
  headers: stringMap.default({}),
  auth: z.string().nullish(),
  toolTimeout: z.number().positive().default(30),
  enabledTools: z.array(z.string()).default(['*']),
});

export const ExecConfigSchema = z.looseObject({
  enable: z.boolean().default(true),
  /** Seconds; upstream's 0 ("no limit") and anything longer get the exec tool's cap (600 s) instead of a refusal. */
  timeout: z
    .int()
    .nonnegative()
    .default(60)
    .transform((seconds) => (seconds === 0 ? 600 : Math.min(seconds, 600))),
  pathPrepend: z.string().default(''),
  pathAppend: z.string().default(''),
  /** `auto` = bubblewrap when installed; `""` is nanobot's spelling of `none`. */
  sandbox: z.enum(['auto', 'bwrap', 'none', '']).default('auto'),
  /** Network inside the sandbox: `auto` = outbound only (slirp4netns) when available, else none. */
  sandboxNetwork: z.enum(['auto', 'user', 'none', 'host']).default('auto'),
  sandboxRoBinds: z.array(z.string()).default([]),
  sandboxRwBinds: z.array(z.string()).default([]),
  allowedEnvKeys: z.array(z.string()).default([]),
  allowPatterns: z.array(z.string()).default([]),
  denyPatterns: z.array(z.string()).default([]),
});

export const ToolsSchema = z.looseObject({
  web: z
    .looseObject({
      enable: z.boolean().default(true),
      proxy: z.string().nullish(),
      userAgent: z.string().nullish(),
      search: z
        .looseObject({
          provider: z.string().default('duckduckgo'),
          apiKey: z.string().nullish(),
          baseUrl: z.string().nullish(),
          /** Upstream has no upper bound; more than 10 is read as 10 (the most the search tool asks for). */
          maxResults: z
            .int()
            .min(1)
            .default(5)
            .transform((n) => Math.min(n, 10)),
          timeout: z.number().positive().default(30),
        })
        .prefault({}),
      fetch: z.looseObject({ useJinaReader: z.boolean().default(true) }).prefault({}),
    })
    .prefault({}),
  exec: ExecConfigSchema.prefault({}),
  file: z.looseObject({ enable: z.boolean().default(true) }).prefault({}),
  cliApps: z
    .looseObject({
      enable: z.boolean().default(true),
      installTimeout: z.number().positive().default(300),
      runTimeout: z.number().positive().default(60),
      catalogTtlSeconds: z.number().positive().default(3600),
    })
    .prefault({}),
  my: z.looseObject({ enable: z.boolean().default(true), allowSet: z.boolean().default(false) }).prefault({}),
  /** The `generate_image` tool (tools/image/): registered only when enabled; providers.<provider> holds the key. */
  imageGeneration: z
    .looseObject({
      enabled: z.boolean().default(false),
      provider: z.string().min(1).default('openrouter'),
      model: z.string().min(1).default('openai/gpt-5.4-image-2'),
      defaultAspectRatio: z.string().default('1:1'),
      defaultImageSize: z.string().default('1K'),
      maxImagesPerTurn: z.int().min(1).max(8).default(4),
      saveDir: z.string().min(1).default('generated'),
    })
    .prefault({}),
  maxSessionMessagesPerMinute: z.int().positive().default(6),
  /**
   * nanobot-ts only (nanobot has no cap): tool calls of one model response that run; each call past it gets an error
   * result telling the model to make it in its next step. Bounds what one runaway response costs.
   */
  maxCallsPerResponse: z.int().positive().default(DEFAULT_MAX_CALLS_PER_RESPONSE),
  /** nanobot defaults this to false; nanobot-ts confines tools to the workspace unless told otherwise. */
  restrictToWorkspace: z.boolean().default(true),
  webuiAllowLocalServiceAccess: z.boolean().default(true),
  mcpServers: z.record(z.string(), McpServerSchema).default({}),
  ssrfWhitelist: z.array(z.string()).default([]),
});

export const ConfigSchema = z.looseObject({
  agents: z.looseObject({ defaults: AgentDefaultsSchema.prefault({}) }).prefault({}),
  modelPresets: z.record(z.string(), ModelPresetSchema).default({}),
  providers: z.record(z.string(), ProviderConfigSchema).default({}),
  channels: ChannelsSchema.prefault({}),
  /** nanobot's speech-to-text for voice notes and the WebUI microphone; the key sits in `providers.<provider>`. */
  transcription: z
    .looseObject({
      enabled: z.boolean().default(true),
      provider: z.string().nullish(),
      model: z.string().nullish(),
      language: z.string().nullish(),
      maxDurationSec: z.number().positive().default(120),
      maxUploadMb: z.number().positive().default(25),
    })
    .prefault({}),
  /**
   * nanobot-ts only: spoken replies through an OpenAI-compatible `POST {apiBase}/audio/speech`, sent as voice notes
   * where the platform has them. `when`: after a voice message (`voice-in`), `always`, or `never` (the default).
   */
  tts: z
    .looseObject({
      provider: z.string().default('openai'),
      model: z.string().default('gpt-4o-mini-tts'),
      voice: z.string().default('alloy'),
      when: z.enum(['voice-in', 'always', 'never']).default('never'),
      /** `response_format` asked for: `opus` (Ogg Opus, what Telegram voice notes are), `mp3`, `wav`, … */
      format: z.string().default('opus'),
      /** Replies longer than this are not spoken (the text still goes out). */
      maxChars: z.int().positive().default(4000),
    })
    .prefault({}),
  api: z
    .looseObject({
      host: z.string().default('127.0.0.1'),
      port: z.int().min(1).max(65535).default(8900),
      timeout: z.number().positive().default(120),
      apiKey: z.string().nullish(),
      /** Browser origins allowed to call the API (CORS); empty = none, `*` = any. */
      corsOrigins: z.array(z.string()).default([]),
    })
    .prefault({}),
  gateway: z
    .looseObject({
      host: z.string().default('127.0.0.1'),
      port: z.int().min(1).max(65535).default(18790),
      restartMode: z.enum(['auto', 'exec', 'spawn', 'exit']).default('auto'),
      heartbeat: z
        .looseObject({
          enabled: z.boolean().default(true),
          intervalS: z.number().positive().default(1800),
          keepRecentMessages: z.int().nonnegative().default(8),
        })
        .prefault({}),
    })
    .prefault({}),
  tools: ToolsSchema.prefault({}),
});

export type Config = z.infer<typeof ConfigSchema>;
export type AgentDefaults = z.infer<typeof AgentDefaultsSchema>;
export type ProviderConfig = z.infer<typeof ProviderConfigSchema>;
export type ExecConfig = z.infer<typeof ExecConfigSchema>;
export type McpServerConfig = z.infer<typeof McpServerSchema>;
export type FallbackModelConfig = z.infer<typeof FallbackModelSchema>;

/** JSON Schema of the config file, for editors (`nanobot config schema`). */
export function configJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(ConfigSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
}
