/**
 * The voice service: nanobot's `transcription` settings resolved against `providers.*` (key, endpoint), audio files
 * transcribed (converted with ffmpeg only when the provider cannot take the format), and — nanobot-ts only — `tts`
 * replies synthesised through an OpenAI-compatible `POST {base}/audio/speech`.
 *
 * Resolution follows nanobot: `transcription.provider`, then the deprecated `channels.transcriptionProvider`, then
 * groq; the language likewise (`transcription.language`, then `channels.transcriptionLanguage`). The key comes from
 * `providers.<provider>.apiKey`, else the provider's environment variable. A `providers.<name>` block that is no
 * built-in transcription provider but has an `apiBase` is an OpenAI-compatible server (a local whisper), key optional.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Config } from '../config/schema.js';
import { errorMessage } from '../util/errors.js';
import { convertToWav } from './audio-convert.js';
import { findSpec, normalizeProviderName } from './registry.js';
import {
  endpoint,
  extensionOf,
  findTranscriptionProvider,
  Http,
  type HttpOptions,
  TRANSCRIPTION_PROVIDERS,
  type TranscribeResult,
  type TranscriptionProviderSpec,
  transcribe,
} from './transcription.js';

type Env = Record<string, string | undefined>;

export interface TranscriptionSettings {
  enabled: boolean;
  provider: string;
  spec: TranscriptionProviderSpec;
  model: string;
  language?: string;
  apiKey: string;
  apiBase: string;
  /** Where the key came from, for `doctor`: `providers.groq.apiKey`, `$GROQ_API_KEY`, or undefined (none). */
  keySource?: string;
  /** A key is there (or none is needed: a custom OpenAI-compatible server). */
  configured: boolean;
  maxDurationSec: number;
  maxUploadMb: number;
}

export interface SpeechSettings {
  when: 'voice-in' | 'always' | 'never';
  provider: string;
  model: string;
  voice: string;
  format: string;
  maxChars: number;
  apiKey: string;
  apiBase: string;
  keySource?: string;
}

const nonEmpty = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() ? value.trim() : undefined;

function providerBlock(config: Config, name: string): { apiKey?: string | null; apiBase?: string | null } | undefined {
  const entry = Object.entries(config.providers).find(([key]) => normalizeProviderName(key) === name);
  return entry?.[1];
}

function keyOf(config: Config, name: string, envNames: readonly string[], env: Env) {
  const inConfig = nonEmpty(providerBlock(config, name)?.apiKey);
  if (inConfig) return { apiKey: inConfig, keySource: `providers.${name}.apiKey` };
  const variable = envNames.find((n) => nonEmpty(env[n]));
  return variable ? { apiKey: nonEmpty(env[variable]) ?? '', keySource: `$${variable}` } : { apiKey: '' };
}

export function resolveTranscription(config: Config, env: Env = {}): TranscriptionSettings {
  const top = config.transcription;
  const channels = config.channels as Record<string, unknown>;
  const requested = nonEmpty(top.provider) ?? nonEmpty(channels.transcriptionProvider);
  const builtin = findTranscriptionProvider(requested);
  const customName = requested && !builtin ? normalizeProviderName(requested) : undefined;
  const customBase = customName ? nonEmpty(providerBlock(config, customName)?.apiBase) : undefined;
  const groq = TRANSCRIPTION_PROVIDERS[0] as TranscriptionProviderSpec;
  const spec: TranscriptionProviderSpec =
    builtin ??
    (customName && customBase
      ? { ...groq, name: customName, aliases: [], defaultModel: 'whisper-1', defaultApiBase: customBase, envKeys: [] }
      : groq);
  const key = keyOf(
    config,
    spec.name,
    [...spec.envKeys, ...(findSpec(spec.name)?.envKey ? [findSpec(spec.name)?.envKey as string] : [])],
    env,
  );
  const language = nonEmpty(top.language) ?? nonEmpty(channels.transcriptionLanguage);
  return {
    enabled: top.enabled,
    provider: spec.name,
    spec,
    model: nonEmpty(top.model) ?? spec.defaultModel,
    ...(language ? { language } : {}),
    ...key,
    apiBase: nonEmpty(providerBlock(config, spec.name)?.apiBase) ?? spec.defaultApiBase,
    configured: Boolean(key.apiKey) || (customBase !== undefined && !builtin),
    maxDurationSec: top.maxDurationSec,
    maxUploadMb: top.maxUploadMb,
  };
}

export function resolveSpeech(config: Config, env: Env = {}): SpeechSettings {
  const tts = config.tts;
  const name = normalizeProviderName(tts.provider);
  const chat = findSpec(name);
  const envNames = chat ? [chat.envKey, ...(chat.envKeyAliases ?? [])].filter((n): n is string => Boolean(n)) : [];
  return {
    when: tts.when,
    provider: name,
    model: tts.model,
    voice: tts.voice,
    format: tts.format,
    maxChars: tts.maxChars,
    ...keyOf(config, name, envNames, env),
    apiBase: nonEmpty(providerBlock(config, name)?.apiBase) ?? chat?.defaultApiBase ?? 'https://api.openai.com/v1',
  };
}

export type SpeakResult = { ok: true; path: string } | { ok: false; error: string };

export interface VoiceService {
  /** Transcription is on and has what it needs (a key): voice notes will be transcribed. */
  transcriptionReady(): boolean;
  transcribeFile(path: string, signal?: AbortSignal): Promise<TranscribeResult>;
  /** Is a reply to this message to be spoken? (`voiceIn`: the user's message was a transcribed voice note.) */
  speaks(voiceIn: boolean): boolean;
  /** Synthesises `text` into an audio file under the service's directory (the caller deletes it after sending). */
  speak(text: string, signal?: AbortSignal): Promise<SpeakResult>;
  settings(): { transcription: TranscriptionSettings; speech: SpeechSettings };
}

export interface VoiceServiceOptions {
  config: () => Config;
  env?: Env;
  /** Where converted audio and synthesised replies are written (`<dataDir>/media/voice`). */
  dir: string;
  http?: HttpOptions;
  /** The ffmpeg binary (default `ffmpeg` on PATH). */
  ffmpeg?: string;
}

const MIME: Record<string, string> = {
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  opus: 'audio/ogg',
  mp3: 'audio/mpeg',
  m4a: 'audio/mp4',
  mp4: 'audio/mp4',
  wav: 'audio/wav',
  webm: 'audio/webm',
  flac: 'audio/flac',
  aac: 'audio/aac',
  amr: 'audio/amr',
};

export const audioMimeOf = (name: string): string => MIME[extensionOf(name)] ?? 'application/octet-stream';

export function createVoiceService(options: VoiceServiceOptions): VoiceService {
  const env = options.env ?? {};
  const transcription = () => resolveTranscription(options.config(), env);
  const speech = () => resolveSpeech(options.config(), env);
  return {
    transcriptionReady: () => {
      const t = transcription();
      return t.enabled && t.configured;
    },
    settings: () => ({ transcription: transcription(), speech: speech() }),
    async transcribeFile(path, signal) {
      const t = transcription();
      if (!t.enabled) return { ok: false, error: 'transcription is disabled (transcription.enabled)' };
      if (!t.configured)
        return { ok: false, error: `no API key for ${t.provider} transcription (providers.${t.provider}.apiKey)` };
      let file = path;
      let converted: string | undefined;
      if (!t.spec.accepts.includes(extensionOf(path))) {
        const out = join(options.dir, `${Date.now()}-${randomBytes(3).toString('hex')}.wav`);
        await mkdir(options.dir, { recursive: true, mode: 0o700 });
        const conversion = await convertToWav(path, out, { ...(options.ffmpeg ? { ffmpeg: options.ffmpeg } : {}) });
        if (!conversion.ok)
          return { ok: false, error: `${t.provider} cannot take .${extensionOf(path)} audio: ${conversion.error}` };
        file = converted = out;
      }
      try {
        const bytes = await readFile(file);
        const name = basename(file);
        return await transcribe(
          {
            spec: t.spec,
            apiKey: t.apiKey,
            apiBase: t.apiBase,
            model: t.model,
            ...(t.language ? { language: t.language } : {}),
            audio: { bytes, name, mimeType: audioMimeOf(name) },
          },
          { ...options.http, ...(signal ? { signal } : {}) },
        );
      } catch (err) {
        return { ok: false, error: `could not read the audio: ${errorMessage(err)}` };
      } finally {
        if (converted) await rm(converted, { force: true });
      }
    },
    speaks: (voiceIn) => {
      const { when } = speech();
      return when === 'always' || (when === 'voice-in' && voiceIn);
    },
    async speak(text, signal) {
      const s = speech();
      if (text.length > s.maxChars) return { ok: false, error: `the reply is over tts.maxChars (${s.maxChars})` };
      const http = new Http({ ...options.http, ...(signal ? { signal } : {}) }, `${s.provider} speech`);
      try {
        const response = await http.request(endpoint(s.apiBase, 'audio/speech'), () => ({
          method: 'POST',
          headers: {
            ...(s.apiKey ? { authorization: `Bearer ${s.apiKey}` } : {}),
            'content-type': 'application/json',
          },
          body: JSON.stringify({ model: s.model, voice: s.voice, input: text, response_format: s.format }),
        }));
        const bytes = new Uint8Array(await response.arrayBuffer());
        if (bytes.byteLength === 0) return { ok: false, error: `${s.provider} speech answered with no audio` };
        await mkdir(options.dir, { recursive: true, mode: 0o700 });
        const ext = s.format === 'opus' ? 'ogg' : s.format.replace(/[^a-z0-9]/gi, '') || 'audio';
        const path = join(options.dir, `${Date.now()}-${randomBytes(3).toString('hex')}-reply.${ext}`);
        await writeFile(path, bytes, { mode: 0o600 });
        return { ok: true, path };
      } catch (err) {
        return { ok: false, error: errorMessage(err) };
      }
    },
  };
}
