/**
 * The provider registry: one table, in nanobot's match-priority order (gateways before vendors, local and OAuth last).
 * Resolution (`resolve.ts`), the wire adapters and `nanobot status` all read from here; adding a provider is one entry.
 */

export type WireApi = 'openai' | 'anthropic' | 'bedrock';

/**
 * gateway: routes any model (OpenRouter…); standard: one vendor's models; direct: the user supplies the endpoint;
 * local: a server on this machine; oauth: signs in with a subscription instead of an API key.
 */
export type ProviderKind = 'gateway' | 'direct' | 'standard' | 'local' | 'oauth';

/** How the configured model name becomes the name sent upstream (nanobot §7 "Model name sent upstream"). */
export type ModelNameRule =
  | { kind: 'keep' }
  | { kind: 'last-segment' }
  /** Strip the first path segment when it equals one of these (compared with `-` read as `_`). */
  | { kind: 'strip-prefixes'; prefixes: readonly string[] };

/** Vendor deviations from the plain OpenAI chat wire. All optional; absent means "behaves like OpenAI". */
export interface ProviderQuirks {
  /** Send `max_completion_tokens` instead of `max_tokens`. */
  maxCompletionTokens?: boolean;
  /** How the vendor switches thinking on/off in the request body when a reasoning effort is set. */
  thinkingStyle?: 'thinking_type' | 'enable_thinking' | 'reasoning_split';
  /** OpenRouter takes `reasoning: {effort}` rather than a flat `reasoning_effort`. */
  reasoningParam?: 'reasoning_effort' | 'reasoning_object';
  /** Vendor vocabulary for reasoning effort; a value of "" omits the parameter. */
  reasoningEffortMap?: Readonly<Record<string, string>>;
  /** Models (substring) that reason implicitly and reject a reasoning-effort parameter. */
  noReasoningEffortModels?: readonly string[];
  /** Models (substring) whose temperature is fixed server-side; sending one is a 400. */
  omitTemperatureModels?: readonly string[];
  /** Strict schemas that reject `reasoning_content` on replayed assistant messages. */
  stripReasoningContent?: boolean;
  /** Vendor requires 9-character alphanumeric tool-call ids. */
  shortToolCallIds?: boolean;
  /** Vendor may put the answer in the reasoning field and leave content empty. */
  reasoningAsContent?: boolean;
  /** Azure OpenAI: deployment-scoped URLs, `api-key` header, `api-version` query. */
  azure?: boolean;
}

export interface ProviderSpec {
  /** Config key under `providers` (snake_case; the camelCase form is accepted too). */
  name: string;
  label: string;
  wire: WireApi;
  kind: ProviderKind;
  defaultApiBase?: string;
  /** The vendor's conventional environment variable for the API key. */
  envKey?: string;
  /** Other variables other tools use for the same key. */
  envKeyAliases?: readonly string[];
  /** Lower-case model-name substrings for auto routing; a leading `^` anchors at the start of the bare model name. */
  keywords: readonly string[];
  modelName: ModelNameRule;
  /** Accepts Anthropic-style `cache_control` breakpoints (the OpenAI wire adds them only for `cacheControlModels`). */
  supportsPromptCaching: boolean;
  /**
   * On the OpenAI wire, the models (lower-case substrings of the model name) whose upstream caches only with explicit
   * `cache_control` breakpoints (OpenRouter: Claude and Gemini); other models there cache on their own.
   */
  cacheControlModels?: readonly string[];
  /** Other spellings of this provider as a model prefix (`hosted_vllm/…` is vLLM). */
  prefixAliases?: readonly string[];
  keyRequired: boolean;
  /** Headers the vendor needs on every request (user `extraHeaders` win). */
  defaultHeaders?: Readonly<Record<string, string>>;
  quirks?: ProviderQuirks;
  /** Set when nanobot-ts cannot talk to this provider yet; selecting it yields a user error carrying this reason. */
  unsupported?: string;
}

const KEEP: ModelNameRule = { kind: 'keep' };
const LAST_SEGMENT: ModelNameRule = { kind: 'last-segment' };
const strip = (...prefixes: string[]): ModelNameRule => ({ kind: 'strip-prefixes', prefixes });

/** What GitHub Copilot expects from an editor integration (its chat API rejects requests without them). */
export const COPILOT_HEADERS: Readonly<Record<string, string>> = {
  'Editor-Version': 'vscode/1.99.0',
  'Editor-Plugin-Version': 'copilot-chat/0.26.0',
  'Copilot-Integration-Id': 'vscode-chat',
  'User-Agent': 'nanobot',
};

type SpecInput = Omit<ProviderSpec, 'wire' | 'supportsPromptCaching' | 'keyRequired' | 'modelName'> &
  Partial<Pick<ProviderSpec, 'wire' | 'supportsPromptCaching' | 'keyRequired' | 'modelName'>>;

/** Fills the defaults shared by most entries: OpenAI wire, key required unless local/oauth/direct. */
function spec(input: SpecInput): ProviderSpec {
  const keyless = input.kind === 'local' || input.kind === 'oauth' || input.kind === 'direct';
  return {
    wire: 'openai',
    supportsPromptCaching: false,
    keyRequired: !keyless,
    // A vendor endpoint does not know its own name as a prefix ("deepseek/deepseek-chat" → "deepseek-chat").
    modelName: input.kind === 'gateway' ? KEEP : strip(input.name, input.name.replace(/_/g, '-')),
    ...input,
  };
}

export const PROVIDERS: readonly ProviderSpec[] = [
  // Direct: the user supplies the endpoint.
  spec({ name: 'custom', label: 'Custom (OpenAI-compatible)', kind: 'direct', keywords: [] }),
  spec({
    name: 'azure_openai',
    label: 'Azure OpenAI',
    kind: 'direct',
    envKey: 'AZURE_OPENAI_API_KEY',
    keywords: ['azure', 'azure-openai'],
    modelName: strip('azure_openai', 'azure'),
    prefixAliases: ['azure'],
    keyRequired: true,
    quirks: { azure: true, maxCompletionTokens: true },
  }),
  spec({
    name: 'bedrock',
    label: 'AWS Bedrock',
    wire: 'bedrock',
    kind: 'direct',
    // Shown by `nanobot status`; the adapter derives the endpoint from the region unless apiBase is configured.
    defaultApiBase: 'https://bedrock-runtime.us-east-1.amazonaws.com',
    envKey: 'AWS_BEARER_TOKEN_BEDROCK',
    keywords: ['bedrock', 'anthropic.claude', 'amazon.nova', 'meta.', 'mistral.', 'cohere.', 'openai.gpt-oss', 'ai21.'],
    modelName: strip('bedrock'),
  }),

  // Gateways: route any model, so they win the "first provider with a key" fallback.
  spec({
    name: 'openrouter',
    label: 'OpenRouter',
    kind: 'gateway',
    defaultApiBase: 'https://openrouter.ai/api/v1',
    envKey: 'OPENROUTER_API_KEY',
    keywords: ['openrouter'],
    supportsPromptCaching: true,
    cacheControlModels: ['claude', 'anthropic/', 'gemini'],
    defaultHeaders: { 'X-Title': 'nanobot' },
    quirks: { reasoningParam: 'reasoning_object' },
  }),
  spec({
    name: 'orcarouter',
    label: 'OrcaRouter',
    kind: 'gateway',
    defaultApiBase: 'https://api.orcarouter.ai/v1',
    envKey: 'ORCAROUTER_API_KEY',
    keywords: ['orcarouter', 'orca_router'],
  }),
  spec({
    name: 'edenai',
    label: 'Eden AI',
    kind: 'gateway',
    defaultApiBase: 'https://api.edenai.run/v3',
    envKey: 'EDENAI_API_KEY',
    keywords: ['edenai'],
  }),
  spec({
    name: 'opencode',
    label: 'OpenCode Zen',
    kind: 'gateway',
    defaultApiBase: 'https://opencode.ai/zen/v1',
    envKey: 'OPENCODE_API_KEY',
    keywords: ['opencode/', 'opencode', 'opencode-zen', 'opencode_zen'],
    modelName: strip('opencode', 'opencode_zen'),
  }),
  spec({
    name: 'opencode_zen',
    label: 'OpenCode Zen',
    kind: 'gateway',
    defaultApiBase: 'https://opencode.ai/zen/v1',
    envKey: 'OPENCODE_API_KEY',
    keywords: ['opencode/', 'opencode_zen', 'opencode-zen'],
    modelName: strip('opencode', 'opencode_zen'),
  }),
  spec({
    name: 'opencode_go',
    label: 'OpenCode Go',
    kind: 'gateway',
    defaultApiBase: 'https://opencode.ai/zen/go/v1',
    envKey: 'OPENCODE_API_KEY',
    keywords: ['opencode-go', 'opencode_go'],
    modelName: strip('opencode_go'),
  }),
  spec({
    name: 'huggingface',
    label: 'Hugging Face',
    kind: 'gateway',
    defaultApiBase: 'https://router.huggingface.co/v1',
    envKey: 'HF_TOKEN',
    envKeyAliases: ['HUGGINGFACE_API_KEY'],
    keywords: ['huggingface', 'hugging-face'],
  }),
  spec({
    name: 'skywork',
    label: 'Skywork',
    kind: 'gateway',
    defaultApiBase: 'https://api.apifree.ai/agent/v1',
    envKey: 'SKYWORK_API_KEY',
    envKeyAliases: ['APIFREE_API_KEY'],
    keywords: ['skywork', 'skyclaw', 'apifree'],
  }),
  spec({
    name: 'aihubmix',
    label: 'AiHubMix',
    kind: 'gateway',
    defaultApiBase: 'https://aihubmix.com/v1',
    envKey: 'AIHUBMIX_API_KEY',
    keywords: ['aihubmix'],
    modelName: LAST_SEGMENT,
  }),
  spec({
    name: 'siliconflow',
    label: 'SiliconFlow',
    kind: 'gateway',
    defaultApiBase: 'https://api.siliconflow.cn/v1',
    envKey: 'SILICONFLOW_API_KEY',
    keywords: ['siliconflow'],
  }),
  spec({
    name: 'novita',
    label: 'Novita AI',
    kind: 'gateway',
    defaultApiBase: 'https://api.novita.ai/openai',
    envKey: 'NOVITA_API_KEY',
    keywords: ['novita'],
  }),
  spec({
    name: 'volcengine',
    label: 'VolcEngine',
    kind: 'gateway',
    defaultApiBase: 'https://ark.cn-beijing.volces.com/api/v3',
    envKey: 'ARK_API_KEY',
    keywords: ['volcengine', 'volces', 'ark'],
    quirks: { thinkingStyle: 'thinking_type', maxCompletionTokens: true },
  }),
  spec({
    name: 'volcengine_coding_plan',
    label: 'VolcEngine Coding Plan',
    kind: 'gateway',
    defaultApiBase: 'https://ark.cn-beijing.volces.com/api/coding/v3',
    envKey: 'ARK_API_KEY',
    keywords: ['volcengine-plan'],
    modelName: LAST_SEGMENT,
    quirks: { thinkingStyle: 'thinking_type', maxCompletionTokens: true },
  }),
  spec({
    name: 'byteplus',
    label: 'BytePlus',
    kind: 'gateway',
    defaultApiBase: 'https://ark.ap-southeast.bytepluses.com/api/v3',
    envKey: 'BYTEPLUS_API_KEY',
    keywords: ['byteplus'],
    modelName: LAST_SEGMENT,
    quirks: { thinkingStyle: 'thinking_type' },
  }),
  spec({
    name: 'byteplus_coding_plan',
    label: 'BytePlus Coding Plan',
    kind: 'gateway',
    defaultApiBase: 'https://ark.ap-southeast.bytepluses.com/api/coding/v3',
    envKey: 'BYTEPLUS_API_KEY',
    keywords: ['byteplus-plan'],
    modelName: LAST_SEGMENT,
    quirks: { thinkingStyle: 'thinking_type' },
  }),
  spec({
    name: 'modelscope',
    label: 'ModelScope',
    kind: 'gateway',
    defaultApiBase: 'https://api-inference.modelscope.cn/v1',
    envKey: 'MODELSCOPE_API_KEY',
    keywords: ['modelscope'],
    modelName: strip('modelscope'),
    quirks: { thinkingStyle: 'enable_thinking' },
  }),

  // Anthropic Messages API backends.
  spec({
    name: 'anthropic',
    label: 'Anthropic',
    wire: 'anthropic',
    kind: 'standard',
    defaultApiBase: 'https://api.anthropic.com',
    envKey: 'ANTHROPIC_API_KEY',
    keywords: ['anthropic', 'claude'],
    supportsPromptCaching: true,
  }),
  spec({
    name: 'kimi_coding',
    label: 'Kimi Coding',
    wire: 'anthropic',
    kind: 'standard',
    defaultApiBase: 'https://api.kimi.com/coding/v1',
    envKey: 'KIMI_CODING_API_KEY',
    keywords: ['kimi-coding', 'kimi_coding', 'kimi-for-coding'],
    // The coding plan only admits requests that identify as a coding agent.
    defaultHeaders: { 'User-Agent': 'claude-code/0.1.0' },
  }),
  spec({
    name: 'minimax_anthropic',
    label: 'MiniMax (Anthropic API)',
    wire: 'anthropic',
    kind: 'standard',
    defaultApiBase: 'https://api.minimax.io/anthropic',
    envKey: 'MINIMAX_API_KEY',
    keywords: ['minimax_anthropic', 'minimax-anthropic'],
  }),

  // OpenAI-compatible vendors, matched by model-name keywords.
  spec({
    name: 'openai',
    label: 'OpenAI',
    kind: 'standard',
    defaultApiBase: 'https://api.openai.com/v1',
    envKey: 'OPENAI_API_KEY',
    keywords: ['openai', 'gpt', '^o1', '^o3', '^o4'],
    quirks: { maxCompletionTokens: true },
  }),
  spec({
    name: 'deepseek',
    label: 'DeepSeek',
    kind: 'standard',
    defaultApiBase: 'https://api.deepseek.com',
    envKey: 'DEEPSEEK_API_KEY',
    keywords: ['deepseek'],
    quirks: { thinkingStyle: 'thinking_type' },
  }),
  spec({
    name: 'gemini',
    label: 'Gemini',
    kind: 'standard',
    defaultApiBase: 'https://generativelanguage.googleapis.com/v1beta/openai/',
    envKey: 'GEMINI_API_KEY',
    envKeyAliases: ['GOOGLE_API_KEY'],
    keywords: ['gemini', 'gemma'],
  }),
  spec({
    name: 'zhipu',
    label: 'Zhipu AI',
    kind: 'standard',
    defaultApiBase: 'https://open.bigmodel.cn/api/paas/v4',
    envKey: 'ZHIPUAI_API_KEY',
    envKeyAliases: ['ZAI_API_KEY'],
    keywords: ['zhipu', 'glm', 'zai'],
    modelName: strip('zhipu', 'zai'),
    prefixAliases: ['zai'],
  }),
  spec({
    name: 'dashscope',
    label: 'DashScope',
    kind: 'standard',
    defaultApiBase: 'https://dashscope.aliyuncs.com/compatible-mode/v1',
    envKey: 'DASHSCOPE_API_KEY',
    keywords: ['qwen', 'dashscope'],
    quirks: { thinkingStyle: 'enable_thinking' },
  }),
  spec({
    name: 'moonshot',
    label: 'Moonshot',
    kind: 'standard',
    defaultApiBase: 'https://api.moonshot.ai/v1',
    envKey: 'MOONSHOT_API_KEY',
    envKeyAliases: ['KIMI_API_KEY'],
    keywords: ['moonshot', 'kimi'],
    // Kimi K2+ fix temperature per thinking mode; any other value is rejected.
    quirks: { omitTemperatureModels: ['kimi-k'] },
  }),
  spec({
    name: 'minimax',
    label: 'MiniMax',
    kind: 'standard',
    defaultApiBase: 'https://api.minimax.io/v1',
    envKey: 'MINIMAX_API_KEY',
    keywords: ['minimax'],
    quirks: { thinkingStyle: 'reasoning_split' },
  }),
  spec({
    name: 'mistral',
    label: 'Mistral',
    kind: 'standard',
    defaultApiBase: 'https://api.mistral.ai/v1',
    envKey: 'MISTRAL_API_KEY',
    keywords: ['mistral', 'magistral', 'ministral', 'codestral', 'devstral'],
    quirks: {
      reasoningEffortMap: { minimal: 'none', low: 'none', medium: 'high', high: 'high', none: 'none' },
      noReasoningEffortModels: ['magistral'],
      stripReasoningContent: true,
      shortToolCallIds: true,
    },
  }),
  spec({
    name: 'stepfun',
    label: 'StepFun',
    kind: 'standard',
    defaultApiBase: 'https://api.stepfun.com/v1',
    envKey: 'STEPFUN_API_KEY',
    keywords: ['stepfun', 'step-'],
    quirks: { reasoningAsContent: true },
  }),
  spec({
    name: 'xiaomi_mimo',
    label: 'Xiaomi MiMo',
    kind: 'standard',
    defaultApiBase: 'https://api.xiaomimimo.com/v1',
    envKey: 'XIAOMIMIMO_API_KEY',
    envKeyAliases: ['MIMO_API_KEY'],
    keywords: ['xiaomi_mimo', 'mimo'],
    quirks: { thinkingStyle: 'thinking_type' },
  }),
  spec({
    name: 'longcat',
    label: 'LongCat',
    kind: 'standard',
    defaultApiBase: 'https://api.longcat.chat/openai/v1',
    envKey: 'LONGCAT_API_KEY',
    keywords: ['longcat'],
  }),
  spec({
    name: 'ant_ling',
    label: 'Ant Ling',
    kind: 'standard',
    defaultApiBase: 'https://api.ant-ling.com/v1',
    envKey: 'ANT_LING_API_KEY',
    keywords: ['ant_ling', 'ant-ling', 'ling-', 'ring-'],
  }),
  spec({
    name: 'nvidia',
    label: 'NVIDIA NIM',
    kind: 'standard',
    defaultApiBase: 'https://integrate.api.nvidia.com/v1',
    envKey: 'NVIDIA_API_KEY',
    envKeyAliases: ['NVIDIA_NIM_API_KEY'],
    keywords: ['nvidia', 'nemotron', 'nvapi'],
    // NIM model ids themselves start with "nvidia/" (nvidia/llama-3.1-nemotron-…).
    modelName: KEEP,
  }),
  spec({
    name: 'groq',
    label: 'Groq',
    kind: 'standard',
    defaultApiBase: 'https://api.groq.com/openai/v1',
    envKey: 'GROQ_API_KEY',
    keywords: ['groq'],
    // "property 'reasoning_content' is unsupported" on replayed history.
    quirks: { stripReasoningContent: true },
  }),
  spec({
    name: 'qianfan',
    label: 'Baidu Qianfan',
    kind: 'standard',
    defaultApiBase: 'https://qianfan.baidubce.com/v2',
    envKey: 'QIANFAN_API_KEY',
    keywords: ['qianfan', 'ernie'],
  }),

  // Local servers: no key needed; auto routing only picks them when `apiBase` is configured.
  spec({
    name: 'vllm',
    label: 'vLLM',
    kind: 'local',
    envKey: 'VLLM_API_KEY',
    keywords: ['vllm'],
    modelName: strip('vllm', 'hosted_vllm'),
    prefixAliases: ['hosted_vllm'],
  }),
  spec({
    name: 'ollama',
    label: 'Ollama',
    kind: 'local',
    defaultApiBase: 'http://localhost:11434/v1',
    envKey: 'OLLAMA_API_KEY',
    keywords: ['ollama'],
  }),
  spec({
    name: 'lm_studio',
    label: 'LM Studio',
    kind: 'local',
    defaultApiBase: 'http://localhost:1234/v1',
    envKey: 'LM_STUDIO_API_KEY',
    keywords: ['lm-studio', 'lmstudio', 'lm_studio'],
    modelName: strip('lm_studio', 'lmstudio'),
    prefixAliases: ['lmstudio'],
  }),
  spec({
    name: 'atomic_chat',
    label: 'Atomic Chat',
    kind: 'local',
    defaultApiBase: 'http://localhost:1337/v1',
    envKey: 'ATOMIC_CHAT_API_KEY',
    keywords: ['atomic-chat', 'atomic_chat', 'atomicchat'],
  }),
  spec({
    name: 'ovms',
    label: 'OpenVINO Model Server',
    kind: 'local',
    defaultApiBase: 'http://localhost:8000/v3',
    keywords: ['openvino', 'ovms'],
  }),

  // OAuth subscriptions (`nanobot provider login <name>`): need explicit selection; never a fallback.
  spec({
    name: 'openai_codex',
    label: 'OpenAI Codex',
    kind: 'oauth',
    defaultApiBase: 'https://chatgpt.com/backend-api',
    keywords: ['openai-codex'],
  }),
  spec({
    name: 'xai_grok',
    label: 'xAI Grok',
    kind: 'oauth',
    defaultApiBase: 'https://cli-chat-proxy.grok.com/v1',
    keywords: ['xai-grok', 'xai_grok'],
    unsupported:
      'Signing in to xAI Grok is not supported yet in nanobot-ts; `nanobot provider login` supports ' +
      'github-copilot and openai-codex.',
  }),
  spec({
    name: 'github_copilot',
    label: 'GitHub Copilot',
    kind: 'oauth',
    defaultApiBase: 'https://api.githubcopilot.com',
    keywords: ['github_copilot', 'copilot'],
    modelName: LAST_SEGMENT,
    defaultHeaders: COPILOT_HEADERS,
  }),
];

/**
 * Canonical provider name: `-` read as `_`, camelCase read as snake_case
 * (config files are written camelCase, so `providers.lmStudio` is `lm_studio`).
 */
export function normalizeProviderName(name: string): string {
  return name
    .trim()
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/-/g, '_')
    .toLowerCase();
}

const BY_NAME = new Map(PROVIDERS.map((s) => [s.name, s]));

/** The built-in spec for a provider name (any spelling `normalizeProviderName` accepts). */
export function findSpec(name: string): ProviderSpec | undefined {
  return BY_NAME.get(normalizeProviderName(name));
}

/** A spec for a user-named OpenAI-compatible endpoint (`providers.<anyName>` that is not built in). */
export function customSpec(name: string): ProviderSpec {
  const normalized = normalizeProviderName(name);
  return {
    name,
    label: name,
    wire: 'openai',
    kind: 'direct',
    keywords: [],
    // The provider's own name as a model prefix ("myproxy/llama-3") is routing, not part of the model id.
    modelName: strip(name, normalized),
    supportsPromptCaching: false,
    keyRequired: false,
  };
}

/** Does `name` (a model prefix, any spelling) name this provider? */
export function isPrefixOf(spec: ProviderSpec, prefix: string): boolean {
  const wanted = normalizeProviderName(prefix);
  return spec.name === wanted || (spec.prefixAliases ?? []).some((alias) => normalizeProviderName(alias) === wanted);
}

/** Should an OpenAI-wire request to this provider for `model` carry `cache_control` breakpoints? */
export function usesCacheControl(spec: ProviderSpec, model: string): boolean {
  if (!spec.supportsPromptCaching) return false;
  if (spec.wire === 'anthropic') return true;
  const lower = model.toLowerCase();
  return (spec.cacheControlModels ?? []).some((keyword) => lower.includes(keyword));
}

/** The model name the provider expects on the wire. */
export function upstreamModelName(rule: ModelNameRule, model: string): string {
  if (rule.kind === 'keep') return model;
  if (rule.kind === 'last-segment') return model.split('/').pop() ?? model;
  const slash = model.indexOf('/');
  if (slash <= 0) return model;
  const first = normalizeProviderName(model.slice(0, slash));
  return rule.prefixes.some((p) => normalizeProviderName(p) === first) ? model.slice(slash + 1) : model;
}
