import { describe, expect, it } from 'vitest';
import {
  findSpec,
  isResolveError,
  PROVIDERS,
  type ProviderSettings,
  type ResolvedProvider,
  type ResolveError,
  resolveProvider,
} from '../../src/providers/index.js';

type Env = Record<string, string | undefined>;

function resolve(model: string, providers: Record<string, ProviderSettings> = {}, env: Env = {}, provider = 'auto') {
  return resolveProvider({ model, provider, providers, env });
}

function ok(result: ResolvedProvider | ResolveError): ResolvedProvider {
  if (isResolveError(result)) throw new Error(`expected a provider, got: ${result.error} ${result.hint}`);
  return result;
}

function failed(result: ResolvedProvider | ResolveError): ResolveError {
  if (!isResolveError(result)) throw new Error(`expected an error, got provider ${result.name}`);
  return result;
}

describe('the registry', () => {
  it('lists every nanobot provider once, in match-priority order', () => {
    const names = PROVIDERS.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names.slice(0, 4)).toEqual(['custom', 'azure_openai', 'bedrock', 'openrouter']);
    expect(names.indexOf('anthropic')).toBeLessThan(names.indexOf('openai'));
    expect(names.indexOf('kimi_coding')).toBeLessThan(names.indexOf('moonshot'));
    expect(names.slice(-3)).toEqual(['openai_codex', 'xai_grok', 'github_copilot']);
    expect(names).toHaveLength(45);
  });

  it('finds specs by any config spelling', () => {
    expect(findSpec('lmStudio')?.name).toBe('lm_studio');
    expect(findSpec('lm-studio')?.name).toBe('lm_studio');
    expect(findSpec('volcengineCodingPlan')?.name).toBe('volcengine_coding_plan');
    expect(findSpec('nope')).toBeUndefined();
  });
});

describe('resolveProvider with the defaults a new user has', () => {
  it('works from ANTHROPIC_API_KEY alone with the default model', () => {
    const r = ok(resolve('anthropic/claude-opus-4-5', {}, { ANTHROPIC_API_KEY: 'sk-ant-env' }));
    expect(r).toMatchObject({
      name: 'anthropic',
      wire: 'anthropic',
      apiKey: 'sk-ant-env',
      apiBase: 'https://api.anthropic.com',
      upstreamModel: 'claude-opus-4-5',
    });
  });

  it('says which key is missing and how to set it', () => {
    const error = failed(resolve('anthropic/claude-opus-4-5'));
    expect(error.error).toBe('No API key for provider "anthropic".');
    expect(error.hint).toBe('Set providers.anthropic.apiKey in ~/.nanobot/config.json or export ANTHROPIC_API_KEY.');
  });

  it('treats empty strings from a defaulted config as unset', () => {
    const error = failed(resolve('anthropic/claude-opus-4-5', { anthropic: { apiKey: '', apiBase: '' } }));
    expect(error.error).toContain('anthropic');
  });

  it('prefers the config key over the environment', () => {
    const r = ok(resolve('claude-sonnet-4', { anthropic: { apiKey: 'from-config' } }, { ANTHROPIC_API_KEY: 'env' }));
    expect(r.apiKey).toBe('from-config');
  });
});

describe('auto resolution (nanobot §7 step 2)', () => {
  it('a: a model prefix naming a built-in with a key picks it and is stripped for the vendor', () => {
    const r = ok(resolve('deepseek/deepseek-chat', { deepseek: { apiKey: 'k' }, openrouter: { apiKey: 'or' } }));
    expect(r.name).toBe('deepseek');
    expect(r.apiBase).toBe('https://api.deepseek.com');
    expect(r.upstreamModel).toBe('deepseek-chat');
  });

  it('a: a local prefix picks the local server without a key, "-" read as "_"', () => {
    const r = ok(resolve('lm-studio/qwen3-8b'));
    expect(r).toMatchObject({ name: 'lm_studio', apiBase: 'http://localhost:1234/v1', upstreamModel: 'qwen3-8b' });
    expect(r.apiKey).toBeUndefined();
  });

  it('a: a prefix naming a provider without a key falls through to a gateway that has one', () => {
    const r = ok(resolve('deepseek/deepseek-chat', { openrouter: { apiKey: 'sk-or-1' } }));
    expect(r.name).toBe('openrouter');
    expect(r.upstreamModel).toBe('deepseek/deepseek-chat');
  });

  it('a: an OAuth prefix picks the signed-in provider without a key; one not supported yet says so', () => {
    expect(ok(resolve('github-copilot/gpt-4.1'))).toMatchObject({ name: 'github_copilot', upstreamModel: 'gpt-4.1' });
    const error = failed(resolve('xai-grok/grok-4'));
    expect(error.error).toContain('"xai_grok"');
    expect(error.error).toContain('not supported yet');
    expect(error.hint).toMatch(/provider login/);
  });

  it('b: a prefix naming a custom provider picks it and strips its name', () => {
    const providers = { myProxy: { apiBase: 'http://10.0.0.5:4000/v1', apiKey: 'p' } };
    const r = ok(resolve('myProxy/llama-3.3-70b', providers));
    expect(r).toMatchObject({ name: 'myProxy', wire: 'openai', apiBase: 'http://10.0.0.5:4000/v1' });
    expect(r.upstreamModel).toBe('llama-3.3-70b');
  });

  it('c: keywords route bare model names to their vendor', () => {
    const env = { ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'o', DASHSCOPE_API_KEY: 'd', ZHIPUAI_API_KEY: 'z' };
    expect(ok(resolve('claude-sonnet-4-5', {}, env)).name).toBe('anthropic');
    expect(ok(resolve('gpt-4.1-mini', {}, env)).name).toBe('openai');
    expect(ok(resolve('o3-mini', {}, env)).name).toBe('openai');
    expect(ok(resolve('qwen-max', {}, env)).name).toBe('dashscope');
    expect(ok(resolve('glm-4.6', {}, env)).name).toBe('zhipu');
  });

  it('c: registry order decides between overlapping keywords', () => {
    const env = { KIMI_CODING_API_KEY: 'kc', MOONSHOT_API_KEY: 'm' };
    expect(ok(resolve('kimi-for-coding', {}, env)).name).toBe('kimi_coding');
    expect(ok(resolve('kimi-k2.5', {}, env)).name).toBe('moonshot');
  });

  it('c: a keyword match without a key is reported by name when nothing else fits', () => {
    const error = failed(resolve('qwen-max'));
    expect(error.error).toBe('No API key for provider "dashscope".');
    expect(error.hint).toContain('DASHSCOPE_API_KEY');
  });

  it('d: a local server with a configured apiBase serves unknown models', () => {
    const r = ok(resolve('llama3.1:8b', { ollama: { apiBase: 'http://gpu-box:11434/v1' } }));
    expect(r).toMatchObject({ name: 'ollama', apiBase: 'http://gpu-box:11434/v1', upstreamModel: 'llama3.1:8b' });
  });

  it('e: otherwise the first provider with a configured key wins, gateways first', () => {
    const providers = { groq: { apiKey: 'g' }, openrouter: { apiKey: 'or' } };
    expect(ok(resolve('some-unknown-model', providers)).name).toBe('openrouter');
  });

  it('e: a configured key beats one that merely sits in the environment', () => {
    const r = ok(resolve('some-unknown-model', { groq: { apiKey: 'g' } }, { OPENROUTER_API_KEY: 'or' }));
    expect(r.name).toBe('groq');
  });

  it('e: an exported key is enough when nothing is configured', () => {
    expect(ok(resolve('some-unknown-model', {}, { DEEPSEEK_API_KEY: 'd' })).name).toBe('deepseek');
  });

  it('f: finally a custom endpoint with apiBase', () => {
    const r = ok(resolve('some-unknown-model', { custom: { apiBase: 'http://127.0.0.1:9/v1' } }));
    expect(r).toMatchObject({ name: 'custom', apiBase: 'http://127.0.0.1:9/v1', upstreamModel: 'some-unknown-model' });
  });

  it('says what to do when nothing at all is configured', () => {
    const error = failed(resolve('some-unknown-model'));
    expect(error.error).toContain('No LLM provider is configured');
    expect(error.hint).toContain('ANTHROPIC_API_KEY');
  });
});

describe('explicit provider (step 1)', () => {
  it('wins over the model name, which goes to a gateway unchanged', () => {
    const r = ok(resolve('anthropic/claude-sonnet-4-5', { openrouter: { apiKey: 'sk-or' } }, {}, 'openrouter'));
    expect(r).toMatchObject({ name: 'openrouter', apiBase: 'https://openrouter.ai/api/v1' });
    expect(r.upstreamModel).toBe('anthropic/claude-sonnet-4-5');
  });

  it('accepts camelCase config keys and dashed names', () => {
    const providers = { azureOpenai: { apiKey: 'az', apiBase: 'https://me.openai.azure.com' } };
    const r = ok(resolve('gpt-4o-deploy', providers, {}, 'azure-openai'));
    expect(r).toMatchObject({ name: 'azure_openai', apiKey: 'az', apiBase: 'https://me.openai.azure.com' });
  });

  it('picks a named custom provider', () => {
    const providers = {
      work: { apiBase: 'https://llm.corp.example/v1', apiKey: 'w', extraHeaders: { 'X-Team': 'a' } },
    };
    const r = ok(resolve('llama-3', providers, {}, 'work'));
    expect(r.name).toBe('work');
    expect(r.settings.extraHeaders).toEqual({ 'X-Team': 'a' });
  });

  it('names an unknown provider and suggests close names', () => {
    const error = failed(resolve('x', {}, {}, 'openruter'));
    expect(error.error).toBe('Unknown provider "openruter".');
    expect(error.hint).toContain('"openrouter"');
  });

  it('asks for providers.custom.apiBase when custom has none', () => {
    const error = failed(resolve('my-model', { custom: { apiKey: 'k' } }, {}, 'custom'));
    expect(error.error).toContain('"custom" needs an API base URL');
    expect(error.hint).toContain('providers.custom.apiBase');
  });

  it('resolves bedrock by name or prefix without an apiBase or key (region and AWS credential chain)', () => {
    expect(ok(resolve('anthropic.claude-3', {}, {}, 'bedrock'))).toMatchObject({ name: 'bedrock', wire: 'bedrock' });
    expect(ok(resolve('bedrock/anthropic.claude-3'))).toMatchObject({
      name: 'bedrock',
      upstreamModel: 'anthropic.claude-3',
    });
  });
});

describe('model name sent upstream', () => {
  const key = (name: string) => ({ [name]: { apiKey: 'k' } });
  const upstream = (model: string, provider: string) => ok(resolve(model, key(provider), {}, provider)).upstreamModel;

  it('follows nanobot §7', () => {
    expect(upstream('anthropic/claude-3-7-sonnet', 'aihubmix')).toBe('claude-3-7-sonnet');
    expect(upstream('seed/doubao-seed-1.6', 'byteplus')).toBe('doubao-seed-1.6');
    expect(upstream('opencode-go/kimi-k2', 'opencode_go')).toBe('kimi-k2');
    expect(upstream('opencode/grok-code', 'opencode')).toBe('grok-code');
    expect(upstream('modelscope/Qwen/Qwen3-235B', 'modelscope')).toBe('Qwen/Qwen3-235B');
    expect(upstream('qwen/qwen3-coder', 'openrouter')).toBe('qwen/qwen3-coder');
    expect(upstream('nvidia/llama-3.1-nemotron-70b-instruct', 'nvidia')).toBe('nvidia/llama-3.1-nemotron-70b-instruct');
  });
});
