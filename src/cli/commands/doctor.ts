/**
 * `nanobot doctor [--ping]`: checks the setup without calling a model (config, workspace, how the model resolves and
 * why, key or sign-in, base URL, fallbacks, presets, prices). `--ping` adds one tiny request to the model.
 * Exits 1 when a check fails.
 */

import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { channelSchemas } from '../../channels/registry.js';
import type { LoadedConfig } from '../../config/load.js';
import { effectiveModel, type ModelSettings } from '../../config/model.js';
import { configNotices } from '../../config/notices.js';
import { closest } from '../../config/unknown-keys.js';
import { fallbackModels, modelInForce, resolveModel } from '../../providers/chain.js';
import { findPrice } from '../../providers/cost.js';
import { findOAuthProvider, oauthStatus } from '../../providers/oauth/index.js';
import type { ProviderOptions } from '../../providers/options.js';
import { pingModel } from '../../providers/ping.js';
import { findSpec, PROVIDERS } from '../../providers/registry.js';
import { isResolveError, type ResolvedProvider } from '../../providers/resolve.js';
import { resolveSpeech, resolveTranscription } from '../../providers/voice.js';
import { IMAGE_PROVIDERS, imageProviderName, imageProviderSettings } from '../../tools/image/providers.js';
import { errorMessage, UserError } from '../../util/errors.js';
import type { GlobalOptions } from '../main.js';
import { setup } from '../setup.js';
import { explainResolution, maskKey } from './status.js';

export interface DoctorFlags {
  ping?: boolean;
}

export interface DoctorDeps {
  env?: NodeJS.ProcessEnv;
  out?: (line: string) => void;
  /** Adapter seams for tests. */
  adapter?: ProviderOptions;
}

type Level = 'ok' | 'warn' | 'fail' | 'info';
const MARK: Record<Level, string> = { ok: '✓', warn: '!', fail: '✗', info: '·' };

export async function runDoctor(opts: GlobalOptions & DoctorFlags, deps: DoctorDeps = {}): Promise<void> {
  const env = deps.env ?? process.env;
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  let failed = false;
  const report = (level: Level, title: string, detail = '', hint = '') => {
    if (level === 'fail') failed = true;
    out(`${MARK[level]} ${title}${detail ? `: ${detail}` : ''}`);
    if (hint) out(`    ${hint}`);
  };

  let loaded: LoadedConfig;
  try {
    loaded = (await setup(opts, env)).loaded;
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    report('fail', 'Config', err.message, err.hint);
    process.exitCode = 1;
    return;
  }
  report('ok', 'Config', loaded.configPath);
  await checkWorkspace(loaded, report);

  let model: ModelSettings;
  try {
    model = modelInForce(loaded, env);
  } catch (err) {
    report('fail', 'Model preset', errorMessage(err), err instanceof UserError ? err.hint : '');
    process.exitCode = 1;
    return;
  }
  const resolved = resolveModel(loaded, model, env);
  const label = `Model ${model.model}${model.preset ? ` (preset ${model.preset})` : ''}`;
  if (isResolveError(resolved)) {
    report('fail', label, resolved.error, resolved.hint);
  } else {
    const chosen = model.autoChosen ? ` (${model.autoChosen})` : '';
    report('ok', label, `provider ${resolved.name}: ${explainResolution(resolved)}${chosen}`);
    await checkCredentials(loaded, resolved, report);
    checkBaseUrl(resolved, report);
  }
  await checkImageGeneration(loaded, env, report);
  checkSettings(loaded, model, env, report);
  checkFallbacks(loaded, env, report);
  checkPresets(loaded, env, report);
  checkPrices(loaded, model, resolved, report);
  checkVoice(loaded, env, report);
  report('info', 'Retry mode', loaded.config.agents.defaults.providerRetryMode);
  if (opts.ping && !isResolveError(resolved)) await ping(loaded, env, resolved, deps.adapter, report);
  if (failed) process.exitCode = 1;
}

type Report = (level: Level, title: string, detail?: string, hint?: string) => void;

async function checkWorkspace(loaded: LoadedConfig, report: Report): Promise<void> {
  try {
    await access(loaded.workspace, constants.W_OK);
    report('ok', 'Workspace', loaded.workspace);
  } catch {
    report(
      'fail',
      'Workspace',
      `${loaded.workspace} is not writable`,
      'Fix its permissions or set agents.defaults.workspace.',
    );
  }
}

async function checkCredentials(loaded: LoadedConfig, resolved: ResolvedProvider, report: Report): Promise<void> {
  const oauth = resolved.spec.kind === 'oauth' ? findOAuthProvider(resolved.spec.name) : undefined;
  if (oauth) {
    const token = await oauthStatus(join(loaded.dataDir, 'auth'), oauth);
    if (!token) {
      report('fail', 'Sign-in', `${oauth.label} is not signed in`, `Run \`nanobot provider login ${oauth.cliName}\`.`);
      return;
    }
    const who = token.accountId ? ` as ${token.accountId}` : '';
    const renews = token.refresh ? ' (renewed automatically)' : '';
    report('ok', 'Sign-in', `${oauth.label}${who}${renews}`);
    return;
  }
  if (resolved.apiKey) {
    const from = resolved.keySource === 'config' ? `providers.${resolved.name}.apiKey` : resolved.keySource;
    report('ok', 'API key', `${maskKey(resolved.apiKey)} from ${from}`);
  } else {
    report('info', 'API key', `none (${resolved.spec.label} does not need one)`);
  }
}

/** `tools.imageGeneration`, when enabled: a known provider, its key (or sign-in) and base URL, as for the model. */
async function checkImageGeneration(loaded: LoadedConfig, env: NodeJS.ProcessEnv, report: Report): Promise<void> {
  const image = loaded.config.tools.imageGeneration;
  if (!image.enabled) return;
  const name = imageProviderName(image.provider);
  const title = `Image generation ${image.model}`;
  if (!name) {
    const known = Object.keys(IMAGE_PROVIDERS).join(', ');
    report(
      'fail',
      title,
      `unknown provider "${image.provider}"`,
      `Set tools.imageGeneration.provider to one of ${known}.`,
    );
    return;
  }
  report('ok', title, `provider ${name}`);
  const settings = imageProviderSettings(name, loaded.config.providers as Record<string, Record<string, unknown>>, env);
  if (name === 'openai_codex') {
    const oauth = findOAuthProvider(name);
    const token = oauth ? await oauthStatus(join(loaded.dataDir, 'auth'), oauth) : undefined;
    if (token) report('ok', 'Image sign-in', `OpenAI Codex${token.accountId ? ` as ${token.accountId}` : ''}`);
    else report('fail', 'Image sign-in', 'OpenAI Codex is not signed in', 'Run `nanobot provider login openai-codex`.');
    return;
  }
  const spec = findSpec(name);
  if (settings.apiKey) {
    const from = settings.keySource === 'config' ? `providers.${name}.apiKey` : settings.keySource;
    report('ok', 'Image API key', `${maskKey(settings.apiKey)} from ${from}`);
  } else if (settings.keyRequired) {
    const where = `Set providers.${name}.apiKey in ${loaded.configPath}`;
    report(
      'fail',
      'Image API key',
      `none for ${name}`,
      spec?.envKey ? `${where} or export ${spec.envKey}.` : `${where}.`,
    );
  } else {
    report('info', 'Image API key', `none (${name} does not need one)`);
  }
  if (name === 'custom' && !settings.apiBase) {
    report('fail', 'Image base URL', 'the custom image provider needs one', 'Set providers.custom.apiBase.');
  } else if (settings.apiBase) {
    checkBaseUrl(
      { name, apiBase: settings.apiBase, ...(settings.apiKey ? { apiKey: settings.apiKey } : {}) },
      report,
      'Image base URL',
    );
  }
}

/** Speech-to-text (`transcription`) and spoken replies (`tts`): is there a key, where from, which endpoint. */
function checkVoice(loaded: LoadedConfig, env: NodeJS.ProcessEnv, report: Report): void {
  const t = resolveTranscription(loaded.config, env);
  // Upstream writes `channels.transcriptionProvider: "groq"` (its default) into every config: that is no choice.
  const legacy = loaded.config.channels.transcriptionProvider;
  const chosen = Boolean(loaded.config.transcription.provider || (legacy && legacy !== 'groq'));
  const what = `${t.provider} ${t.model}${t.language ? ` (${t.language})` : ''}`;
  const keyVars = t.spec.envKeys.map((n) => `$${n}`).join(' or ');
  if (!t.enabled) report('info', 'Transcription', 'off (transcription.enabled is false)');
  else if (t.apiKey) report('ok', 'Transcription', `${what}, key ${maskKey(t.apiKey)} from ${t.keySource}`);
  else if (t.configured) report('ok', 'Transcription', `${what} at ${t.apiBase} (no key)`);
  else if (chosen)
    report(
      'fail',
      'Transcription',
      `${what} has no API key`,
      `Set providers.${t.provider}.apiKey${keyVars ? ` (or ${keyVars})` : ''}.`,
    );
  else
    report(
      'info',
      'Transcription',
      'voice messages stay audio files (no key for the default provider, groq)',
      'Set transcription.provider and that provider’s providers.<name>.apiKey to transcribe them.',
    );
  const s = resolveSpeech(loaded.config, env);
  if (s.when === 'never') return;
  const where = `${s.provider} ${s.model}, voice ${s.voice}, when ${s.when}`;
  const local = LOCAL_HOST.test(hostOf(s.apiBase));
  if (s.apiKey) report('ok', 'Spoken replies', `${where}, key ${maskKey(s.apiKey)} from ${s.keySource}`);
  else if (local) report('ok', 'Spoken replies', `${where} at ${s.apiBase} (no key)`);
  else report('fail', 'Spoken replies', `${where} has no API key`, `Set providers.${s.provider}.apiKey.`);
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}

const LOCAL_HOST =
  /^(localhost|127\.\d+\.\d+\.\d+|\[::1\]|10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+|172\.(1[6-9]|2\d|3[01])\.\d+\.\d+)$/;

function checkBaseUrl(
  resolved: Pick<ResolvedProvider, 'name' | 'apiBase' | 'apiKey'>,
  report: Report,
  title = 'Base URL',
): void {
  let url: URL;
  try {
    url = new URL(resolved.apiBase);
  } catch {
    report('fail', title, `"${resolved.apiBase}" is not a URL`, `Fix providers.${resolved.name}.apiBase.`);
    return;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    report('fail', title, `${resolved.apiBase} is not http(s)`, `Fix providers.${resolved.name}.apiBase.`);
  } else if (url.protocol === 'http:' && resolved.apiKey && !LOCAL_HOST.test(url.hostname)) {
    report('warn', title, `${resolved.apiBase} sends the API key unencrypted`, 'Use https:// for remote hosts.');
  } else {
    report('ok', title, resolved.apiBase);
  }
}

/**
 * Settings that load fine but cannot work together, keys this version does not act on yet, and unknown keys
 * (typos): each one named, so nothing set is silently ignored.
 */
function checkSettings(loaded: LoadedConfig, model: ModelSettings, env: NodeJS.ProcessEnv, report: Report): void {
  const problems = configNotices(loaded.raw, env, undefined, channelSchemas()).map((notice) => notice.text);
  if (model.maxTokens >= model.contextWindowTokens) {
    problems.push(`maxTokens (${model.maxTokens}) must be below contextWindowTokens (${model.contextWindowTokens})`);
  }
  for (const [name, block] of Object.entries(loaded.config.providers)) {
    if (!findSpec(name) && name !== 'assemblyai' && !block.apiBase && block.apiKey) {
      const near = closest(
        name,
        PROVIDERS.map((spec) => spec.name),
      );
      const hint = near ? `; did you mean providers.${near}?` : '';
      problems.push(`providers.${name} is not a built-in provider and has no apiBase, so it is never used${hint}`);
    }
  }
  if (problems.length === 0) report('ok', 'Settings', 'consistent');
  for (const problem of problems) report('warn', 'Settings', problem);
}

function checkFallbacks(loaded: LoadedConfig, env: NodeJS.ProcessEnv, report: Report): void {
  const fallbacks = fallbackModels(loaded);
  if (fallbacks.length === 0) {
    report('info', 'Fallbacks', 'none (agents.defaults.fallbackModels)');
    return;
  }
  for (const fallback of fallbacks) {
    const resolved = resolveModel(loaded, fallback, env);
    const title = `Fallback ${fallback.source}`;
    if (isResolveError(resolved)) report('warn', title, `${fallback.model}: ${resolved.error}`, resolved.hint);
    else report('ok', title, `${fallback.model} via ${resolved.name}`);
  }
}

function checkPresets(loaded: LoadedConfig, env: NodeJS.ProcessEnv, report: Report): void {
  for (const name of Object.keys(loaded.config.modelPresets)) {
    const preset = effectiveModel(loaded.config, name);
    const resolved = resolveModel(loaded, preset, env);
    const title = `Preset ${name}`;
    if (isResolveError(resolved)) report('warn', title, `${preset.model}: ${resolved.error}`, resolved.hint);
    else report('ok', title, `${preset.model} via ${resolved.name}`);
  }
}

function checkPrices(
  loaded: LoadedConfig,
  model: ModelSettings,
  resolved: ResolvedProvider | { error: string },
  report: Report,
): void {
  const prices = loaded.config.agents.defaults.modelPrices;
  if (Object.keys(prices).length === 0) {
    report('info', 'Prices', 'none (agents.defaults.modelPrices); /status shows tokens only');
    return;
  }
  const upstream = 'upstreamModel' in resolved ? resolved.upstreamModel : model.model;
  const price = findPrice(prices, model.model, upstream);
  if (price) report('ok', 'Prices', `${model.model}: $${price.input} in / $${price.output} out per 1M tokens`);
  else report('warn', 'Prices', `no entry for ${model.model}`, 'Its cost is not counted in /status.');
}

async function ping(
  loaded: LoadedConfig,
  env: NodeJS.ProcessEnv,
  resolved: ResolvedProvider,
  adapter: ProviderOptions | undefined,
  report: Report,
): Promise<void> {
  const result = await pingModel(loaded, env, resolved, adapter);
  if (!result.ok) {
    report('fail', 'Ping', `${result.kind}: ${result.message}`);
    return;
  }
  report('ok', 'Ping', `${resolved.name} answered "${result.answer}" in ${result.ms} ms`);
}
