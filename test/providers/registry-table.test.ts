/**
 * Every registry entry, checked against nanobot-facts §7 written out by hand: the wire adapter, the base URL, the
 * key variable, the model name sent upstream and the headers. A new entry fails here until it is added.
 */
import { describe, expect, it } from 'vitest';
import {
  findSpec,
  isResolveError,
  PROVIDERS,
  type ProviderSettings,
  type ResolvedProvider,
  type ResolveError,
  resolveProvider,
  upstreamModelName,
} from '../../src/providers/index.js';

interface Row {
  wire: 'openai' | 'anthropic' | 'bedrock';
  /** undefined: the user must set apiBase. */
  base?: string;
  envKey?: string;
  /** A configured model name and what goes upstream. */
  model: [string, string];
  headers?: Record<string, string>;
}

const TABLE: Record<string, Row> = {
  custom: { wire: 'openai', model: ['my-model', 'my-model'] },
  azure_openai: { wire: 'openai', envKey: 'AZURE_OPENAI_API_KEY', model: ['azure/gpt-4o-deploy', 'gpt-4o-deploy'] },
  bedrock: {
    wire: 'bedrock',
    base: 'https://bedrock-runtime.us-east-1.amazonaws.com',
    envKey: 'AWS_BEARER_TOKEN_BEDROCK',
    model: ['bedrock/amazon.nova-pro', 'amazon.nova-pro'],
  },
  openrouter: {
    wire: 'openai',
    base: 'https://openrouter.ai/api/v1',
    envKey: 'OPENROUTER_API_KEY',
    model: ['anthropic/claude-sonnet-4', 'anthropic/claude-sonnet-4'],
    headers: { 'X-Title': 'nanobot' },
  },
  orcarouter: {
    wire: 'openai',
    base: 'https://api.orcarouter.ai/v1',
    envKey: 'ORCAROUTER_API_KEY',
    model: ['a/b', 'a/b'],
  },
  edenai: { wire: 'openai', base: 'https://api.edenai.run/v3', envKey: 'EDENAI_API_KEY', model: ['a/b', 'a/b'] },
  opencode: {
    wire: 'openai',
    base: 'https://opencode.ai/zen/v1',
    envKey: 'OPENCODE_API_KEY',
    model: ['opencode/grok-code', 'grok-code'],
  },
  opencode_zen: {
    wire: 'openai',
    base: 'https://opencode.ai/zen/v1',
    envKey: 'OPENCODE_API_KEY',
    model: ['opencode-zen/grok-code', 'grok-code'],
  },
  opencode_go: {
    wire: 'openai',
    base: 'https://opencode.ai/zen/go/v1',
    envKey: 'OPENCODE_API_KEY',
    model: ['opencode-go/kimi-k2', 'kimi-k2'],
  },
  huggingface: {
    wire: 'openai',
    base: 'https://router.huggingface.co/v1',
    envKey: 'HF_TOKEN',
    model: ['meta-llama/Llama-3.3-70B-Instruct', 'meta-llama/Llama-3.3-70B-Instruct'],
  },
  skywork: { wire: 'openai', base: 'https://api.apifree.ai/agent/v1', envKey: 'SKYWORK_API_KEY', model: ['x', 'x'] },
  aihubmix: {
    wire: 'openai',
    base: 'https://aihubmix.com/v1',
    envKey: 'AIHUBMIX_API_KEY',
    model: ['anthropic/claude-3-7-sonnet', 'claude-3-7-sonnet'],
  },
  siliconflow: {
    wire: 'openai',
    base: 'https://api.siliconflow.cn/v1',
    envKey: 'SILICONFLOW_API_KEY',
    model: ['Qwen/Qwen3-8B', 'Qwen/Qwen3-8B'],
  },
  novita: { wire: 'openai', base: 'https://api.novita.ai/openai', envKey: 'NOVITA_API_KEY', model: ['a/b', 'a/b'] },
  volcengine: {
    wire: 'openai',
    base: 'https://ark.cn-beijing.volces.com/api/v3',
    envKey: 'ARK_API_KEY',
    model: ['doubao-seed-1-6', 'doubao-seed-1-6'],
  },
  volcengine_coding_plan: {
    wire: 'openai',
    base: 'https://ark.cn-beijing.volces.com/api/coding/v3',
    envKey: 'ARK_API_KEY',
    model: ['volcengine/doubao-seed-code', 'doubao-seed-code'],
  },
  byteplus: {
    wire: 'openai',
    base: 'https://ark.ap-southeast.bytepluses.com/api/v3',
    envKey: 'BYTEPLUS_API_KEY',
    model: ['seed/doubao-seed-1.6', 'doubao-seed-1.6'],
  },
  byteplus_coding_plan: {
    wire: 'openai',
    base: 'https://ark.ap-southeast.bytepluses.com/api/coding/v3',
    envKey: 'BYTEPLUS_API_KEY',
    model: ['byteplus/seed-code', 'seed-code'],
  },
  modelscope: {
    wire: 'openai',
    base: 'https://api-inference.modelscope.cn/v1',
    envKey: 'MODELSCOPE_API_KEY',
    model: ['modelscope/Qwen/Qwen3-235B', 'Qwen/Qwen3-235B'],
  },
  anthropic: {
    wire: 'anthropic',
    base: 'https://api.anthropic.com',
    envKey: 'ANTHROPIC_API_KEY',
    model: ['anthropic/claude-opus-4-5', 'claude-opus-4-5'],
  },
  kimi_coding: {
    wire: 'anthropic',
    base: 'https://api.kimi.com/coding/v1',
    envKey: 'KIMI_CODING_API_KEY',
    model: ['kimi-coding/kimi-for-coding', 'kimi-for-coding'],
    headers: { 'User-Agent': 'claude-code/0.1.0' },
  },
  minimax_anthropic: {
    wire: 'anthropic',
    base: 'https://api.minimax.io/anthropic',
    envKey: 'MINIMAX_API_KEY',
    model: ['MiniMax-M2', 'MiniMax-M2'],
  },
  openai: {
    wire: 'openai',
    base: 'https://api.openai.com/v1',
    envKey: 'OPENAI_API_KEY',
    model: ['openai/gpt-4.1', 'gpt-4.1'],
  },
  deepseek: {
    wire: 'openai',
    base: 'https://api.deepseek.com',
    envKey: 'DEEPSEEK_API_KEY',
    model: ['deepseek/deepseek-chat', 'deepseek-chat'],
  },
  gemini: {
    wire: 'openai',
    base: 'https://generativelanguage.googleapis.com/v1beta/openai/',
    envKey: 'GEMINI_API_KEY',
    model: ['gemini/gemini-2.5-pro', 'gemini-2.5-pro'],
  },
  zhipu: {
    wire: 'openai',
    base: 'https://open.bigmodel.cn/api/paas/v4',
    envKey: 'ZHIPUAI_API_KEY',
    model: ['zai/glm-4.6', 'glm-4.6'],
  },
  dashscope: {
    wire: 'openai',
    base: 'https://dashscope.aliyuncs.com/compatible-mode/v1',
    envKey: 'DASHSCOPE_API_KEY',
    model: ['dashscope/qwen-max', 'qwen-max'],
  },
  moonshot: {
    wire: 'openai',
    base: 'https://api.moonshot.ai/v1',
    envKey: 'MOONSHOT_API_KEY',
    model: ['moonshot/kimi-k2.5', 'kimi-k2.5'],
  },
  minimax: {
    wire: 'openai',
    base: 'https://api.minimax.io/v1',
    envKey: 'MINIMAX_API_KEY',
    model: ['minimax/MiniMax-M2', 'MiniMax-M2'],
  },
  mistral: {
    wire: 'openai',
    base: 'https://api.mistral.ai/v1',
    envKey: 'MISTRAL_API_KEY',
    model: ['mistral/mistral-large-latest', 'mistral-large-latest'],
  },
  stepfun: {
    wire: 'openai',
    base: 'https://api.stepfun.com/v1',
    envKey: 'STEPFUN_API_KEY',
    model: ['step-3', 'step-3'],
  },
  xiaomi_mimo: {
    wire: 'openai',
    base: 'https://api.xiaomimimo.com/v1',
    envKey: 'XIAOMIMIMO_API_KEY',
    model: ['xiaomi_mimo/mimo-v2-flash', 'mimo-v2-flash'],
  },
  longcat: {
    wire: 'openai',
    base: 'https://api.longcat.chat/openai/v1',
    envKey: 'LONGCAT_API_KEY',
    model: ['LongCat-Flash', 'LongCat-Flash'],
  },
  ant_ling: {
    wire: 'openai',
    base: 'https://api.ant-ling.com/v1',
    envKey: 'ANT_LING_API_KEY',
    model: ['ant-ling/ling-1t', 'ling-1t'],
  },
  nvidia: {
    wire: 'openai',
    base: 'https://integrate.api.nvidia.com/v1',
    envKey: 'NVIDIA_API_KEY',
    model: ['nvidia/llama-3.1-nemotron-70b-instruct', 'nvidia/llama-3.1-nemotron-70b-instruct'],
  },
  groq: {
    wire: 'openai',
    base: 'https://api.groq.com/openai/v1',
    envKey: 'GROQ_API_KEY',
    model: ['groq/llama-3.3-70b-versatile', 'llama-3.3-70b-versatile'],
  },
  qianfan: {
    wire: 'openai',
    base: 'https://qianfan.baidubce.com/v2',
    envKey: 'QIANFAN_API_KEY',
    model: ['qianfan/ernie-4.5', 'ernie-4.5'],
  },
  vllm: { wire: 'openai', envKey: 'VLLM_API_KEY', model: ['hosted_vllm/Qwen3-8B', 'Qwen3-8B'] },
  ollama: {
    wire: 'openai',
    base: 'http://localhost:11434/v1',
    envKey: 'OLLAMA_API_KEY',
    model: ['ollama/llama3.1:8b', 'llama3.1:8b'],
  },
  lm_studio: {
    wire: 'openai',
    base: 'http://localhost:1234/v1',
    envKey: 'LM_STUDIO_API_KEY',
    model: ['lm-studio/qwen3-8b', 'qwen3-8b'],
  },
  atomic_chat: {
    wire: 'openai',
    base: 'http://localhost:1337/v1',
    envKey: 'ATOMIC_CHAT_API_KEY',
    model: ['atomic-chat/x', 'x'],
  },
  ovms: { wire: 'openai', base: 'http://localhost:8000/v3', model: ['ovms/llama', 'llama'] },
  openai_codex: {
    wire: 'openai',
    base: 'https://chatgpt.com/backend-api',
    model: ['openai-codex/gpt-5.1-codex', 'gpt-5.1-codex'],
  },
  xai_grok: { wire: 'openai', base: 'https://cli-chat-proxy.grok.com/v1', model: ['xai-grok/grok-4', 'grok-4'] },
  github_copilot: {
    wire: 'openai',
    base: 'https://api.githubcopilot.com',
    model: ['github-copilot/gpt-4.1', 'gpt-4.1'],
    headers: { 'Editor-Version': 'vscode/1.99.0', 'Copilot-Integration-Id': 'vscode-chat' },
  },
};

const USER_BASE = 'http://10.0.0.9:8000/v1';

function resolveExplicit(name: string, settings: ProviderSettings, env: Record<string, string> = {}) {
  const row = TABLE[name] as Row;
  return resolveProvider({ model: row.model[0], provider: name, providers: { [name]: settings }, env });
}

function ok(result: ResolvedProvider | ResolveError): ResolvedProvider {
  if (isResolveError(result)) throw new Error(`${result.error} ${result.hint}`);
  return result;
}

describe('the registry, entry by entry (nanobot §7)', () => {
  it('the table covers every registry entry', () => {
    expect(Object.keys(TABLE).sort()).toEqual(PROVIDERS.map((s) => s.name).sort());
  });

  for (const [name, row] of Object.entries(TABLE)) {
    it(`${name}: ${row.wire} wire, ${row.base ?? 'user apiBase'}, ${row.envKey ?? 'no key variable'}`, () => {
      const spec = findSpec(name);
      expect(spec?.wire).toBe(row.wire);
      expect(spec?.envKey).toBe(row.envKey);
      expect(spec?.defaultApiBase).toBe(row.base);
      expect(upstreamModelName(spec?.modelName ?? { kind: 'keep' }, row.model[0])).toBe(row.model[1]);
      for (const [header, value] of Object.entries(row.headers ?? {}))
        expect(spec?.defaultHeaders?.[header]).toBe(value);

      const settings: ProviderSettings = { apiKey: 'sk-config', ...(row.base ? {} : { apiBase: USER_BASE }) };
      const result = resolveExplicit(name, settings);
      if (spec?.unsupported) {
        // Only entries nanobot-ts cannot serve yet: selecting one says why instead of failing at the first request.
        expect(isResolveError(result) && result.hint).toBe(spec.unsupported);
        return;
      }
      const resolved = ok(result);
      expect(resolved).toMatchObject({
        name,
        wire: row.wire,
        apiBase: row.base ?? USER_BASE,
        upstreamModel: row.model[1],
      });
      expect(resolved.reason?.rule).toBe('explicit');

      if (row.envKey) {
        const fromEnv = ok(resolveExplicit(name, row.base ? {} : { apiBase: USER_BASE }, { [row.envKey]: 'sk-env' }));
        expect(fromEnv.apiKey).toBe('sk-env');
        expect(fromEnv.keySource).toBe(`$${row.envKey}`);
      }
    });
  }

  it('a model prefix routes to its entry in auto mode, for every entry that has one', () => {
    for (const [name, row] of Object.entries(TABLE)) {
      const spec = findSpec(name);
      const prefix = row.model[0].split('/')[0] ?? '';
      if (!row.model[0].includes('/') || spec?.unsupported || !spec) continue;
      const named = spec.name === prefix.replace(/-/g, '_') || spec.prefixAliases?.includes(prefix);
      if (!named) continue;
      const settings: ProviderSettings = { apiKey: 'k', ...(row.base ? {} : { apiBase: USER_BASE }) };
      const result = resolveProvider({
        model: row.model[0],
        provider: 'auto',
        providers: { [name]: settings },
        env: {},
      });
      expect(ok(result).name, row.model[0]).toBe(name);
      expect(ok(result).reason?.rule).toBe('model-prefix');
    }
  });
});

describe('an explicit prefix beats keyword guesses', () => {
  const auto = (model: string, providers: Record<string, ProviderSettings> = {}, env: Record<string, string> = {}) =>
    resolveProvider({ model, provider: 'auto', providers, env });

  it('"groq/qwen3-32b" without a Groq key is not sent to DashScope because it says "qwen"', () => {
    const result = auto('groq/qwen3-32b', {}, { DASHSCOPE_API_KEY: 'd' });
    expect(isResolveError(result) && result.error).toBe('No API key for provider "groq".');
  });

  it('a gateway with a key serves the prefixed model instead, and says why', () => {
    const resolved = ok(auto('groq/qwen3-32b', { openrouter: { apiKey: 'or' } }, { DASHSCOPE_API_KEY: 'd' }));
    expect(resolved.name).toBe('openrouter');
    expect(resolved.reason?.rule).toBe('gateway-for-prefix');
    expect(resolved.reason?.detail).toContain('groq');
  });

  it('"hosted_vllm/…" is vLLM, and "ollama/qwen3" is Ollama, even with a DashScope key', () => {
    const env = { DASHSCOPE_API_KEY: 'd' };
    expect(ok(auto('hosted_vllm/qwen2.5-7b', { vllm: { apiBase: USER_BASE } }, env)).name).toBe('vllm');
    expect(ok(auto('ollama/qwen3', {}, env)).name).toBe('ollama');
  });

  it('"openrouter/…" never falls to another gateway that would not know its model ids', () => {
    const result = auto('openrouter/qwen/qwen3-coder', { aihubmix: { apiKey: 'a' } });
    expect(isResolveError(result) && result.error).toBe('No API key for provider "openrouter".');
  });

  it('keywords still route bare names, and the reason names the keyword', () => {
    const resolved = ok(auto('qwen-max', {}, { DASHSCOPE_API_KEY: 'd' }));
    expect(resolved.name).toBe('dashscope');
    expect(resolved.reason).toEqual({ rule: 'keyword', detail: 'model name contains "qwen" (a dashscope keyword)' });
  });

  it('the first-key rule says where the key came from', () => {
    const resolved = ok(auto('some-unknown-model', {}, { DEEPSEEK_API_KEY: 'd' }));
    expect(resolved.reason?.rule).toBe('first-key');
    expect(resolved.reason?.detail).toContain('$DEEPSEEK_API_KEY');
  });
});
