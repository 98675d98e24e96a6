/**
 * Speech-to-text over HTTP: one adapter per wire shape nanobot's transcription providers speak.
 *
 * - `whisper`: OpenAI's multipart `POST {base}/audio/transcriptions` (file, model, language) → `{ text }`. Groq,
 *   OpenAI, SiliconFlow and any OpenAI-compatible server (a local whisper.cpp / faster-whisper) speak it.
 * - `openrouter`: the same path with a JSON body, the audio base64 in `input_audio: { data, format }`.
 * - `mimo`: Xiaomi MiMo ASR, chat completions with an `input_audio` data URL part; text in `choices[0].message`.
 * - `stepfun`: `POST {base}/audio/asr/sse`, base64 JSON in, server-sent events out (`transcript.text.done`).
 * - `assemblyai`: raw upload (`POST /upload` → `upload_url`), `POST /transcript`, then poll `GET /transcript/{id}`.
 *
 * Failures are data (`{ ok: false, error }`), never exceptions; 408/429/5xx and network errors are retried with
 * backoff, other 4xx (a wrong key) are not.
 */
import { errorMessage } from '../util/errors.js';

export type TranscriptionWire = 'whisper' | 'openrouter' | 'mimo' | 'stepfun' | 'assemblyai';

export interface TranscriptionProviderSpec {
  /** nanobot's name (also the `providers.<name>` block holding the key). */
  name: string;
  aliases: readonly string[];
  wire: TranscriptionWire;
  defaultModel: string;
  defaultApiBase: string;
  /** Environment variables tried for the key when `providers.<name>.apiKey` is empty. */
  envKeys: readonly string[];
  /** Audio extensions the endpoint takes as they are; anything else is converted to WAV first. */
  accepts: readonly string[];
}

const WHISPER_FORMATS = ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'opus', 'wav', 'webm'];

export const TRANSCRIPTION_PROVIDERS: readonly TranscriptionProviderSpec[] = [
  {
    name: 'groq',
    aliases: [],
    wire: 'whisper',
    defaultModel: 'whisper-large-v3',
    defaultApiBase: 'https://api.groq.com/openai/v1',
    envKeys: ['GROQ_API_KEY'],
    accepts: WHISPER_FORMATS,
  },
  {
    name: 'openai',
    aliases: [],
    wire: 'whisper',
    defaultModel: 'whisper-1',
    defaultApiBase: 'https://api.openai.com/v1',
    envKeys: ['OPENAI_API_KEY'],
    accepts: WHISPER_FORMATS,
  },
  {
    name: 'openrouter',
    aliases: [],
    wire: 'openrouter',
    defaultModel: 'openai/whisper-1',
    defaultApiBase: 'https://openrouter.ai/api/v1',
    envKeys: ['OPENROUTER_API_KEY'],
    accepts: ['wav', 'mp3', 'aac', 'ogg', 'oga', 'opus', 'flac', 'm4a', 'mp4', 'aiff'],
  },
  {
    name: 'xiaomi_mimo',
    aliases: ['mimo', 'xiaomi'],
    wire: 'mimo',
    defaultModel: 'mimo-v2.5-asr',
    defaultApiBase: 'https://api.xiaomimimo.com/v1',
    envKeys: ['XIAOMIMIMO_API_KEY', 'MIMO_API_KEY'],
    accepts: ['wav', 'mp3', 'ogg', 'oga', 'opus', 'm4a', 'flac', 'webm'],
  },
  {
    name: 'stepfun',
    aliases: [],
    wire: 'stepfun',
    defaultModel: 'stepaudio-2.5-asr',
    defaultApiBase: 'https://api.stepfun.com/v1',
    envKeys: ['STEPFUN_API_KEY'],
    accepts: ['ogg', 'mp3', 'wav', 'pcm'],
  },
  {
    name: 'assemblyai',
    aliases: [],
    wire: 'assemblyai',
    defaultModel: 'universal-3-pro,universal-2',
    defaultApiBase: 'https://api.assemblyai.com/v2',
    envKeys: ['ASSEMBLYAI_API_KEY'],
    accepts: ['mp3', 'mp4', 'm4a', 'wav', 'ogg', 'oga', 'opus', 'webm', 'flac', 'aac', 'amr', '3gp', 'mov', 'wma'],
  },
  {
    name: 'siliconflow',
    aliases: ['silicon'],
    wire: 'whisper',
    defaultModel: 'FunAudioLLM/SenseVoiceSmall',
    defaultApiBase: 'https://api.siliconflow.cn/v1',
    envKeys: ['SILICONFLOW_API_KEY'],
    accepts: WHISPER_FORMATS,
  },
];

/** A provider by name or alias (`Mimo`, `xiaomi-mimo`, `xiaomiMimo` all work). */
export function findTranscriptionProvider(name: unknown): TranscriptionProviderSpec | undefined {
  if (typeof name !== 'string') return undefined;
  const key = name
    .trim()
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/-/g, '_')
    .toLowerCase();
  return TRANSCRIPTION_PROVIDERS.find((spec) => spec.name === key || spec.aliases.includes(key));
}

export interface AudioInput {
  bytes: Uint8Array;
  /** File name sent with the upload (its extension names the format). */
  name: string;
  mimeType: string;
}

export interface TranscribeRequest {
  spec: TranscriptionProviderSpec;
  apiKey: string;
  apiBase: string;
  model: string;
  language?: string;
  audio: AudioInput;
}

export type TranscribeResult = { ok: true; text: string } | { ok: false; error: string };

export interface HttpOptions {
  fetch?: typeof globalThis.fetch;
  signal?: AbortSignal;
  /** Waits between retries, in ms (three retries); tests pass zeros. */
  retryDelaysMs?: readonly number[];
  /** AssemblyAI: time between polls and how many. */
  pollIntervalMs?: number;
  pollAttempts?: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const RETRYABLE = new Set([408, 429, 500, 502, 503, 504]);
const DEFAULT_RETRY_DELAYS = [1000, 2000, 4000];

/** `{base}/{path}`, unless the base already ends with the path (users paste full endpoint URLs too). */
export function endpoint(base: string, path: string): string {
  const trimmed = base.replace(/\/+$/, '');
  return trimmed.endsWith(`/${path}`) ? trimmed : `${trimmed}/${path}`;
}

export function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot === -1 ? '' : name.slice(dot + 1).toLowerCase();
}

const FORMAT_ALIASES: Record<string, string> = { oga: 'ogg', opus: 'ogg', mpga: 'mp3', mpeg: 'mp3', mp4: 'm4a' };

export async function transcribe(request: TranscribeRequest, options: HttpOptions = {}): Promise<TranscribeResult> {
  const http = new Http(options, request.spec.name);
  try {
    switch (request.spec.wire) {
      case 'whisper':
        return await whisper(http, request);
      case 'openrouter':
        return await openRouter(http, request);
      case 'mimo':
        return await mimo(http, request);
      case 'stepfun':
        return await stepFun(http, request);
      case 'assemblyai':
        return await assemblyAi(http, request);
    }
  } catch (err) {
    if (err instanceof HttpFailure) return { ok: false, error: err.message };
    return { ok: false, error: `${request.spec.name} transcription failed: ${errorMessage(err)}` };
  }
}

async function whisper(http: Http, { apiKey, apiBase, model, language, audio }: TranscribeRequest) {
  const body = () => {
    const form = new FormData();
    form.append('file', new Blob([audio.bytes], { type: audio.mimeType }), audio.name);
    form.append('model', model);
    if (language) form.append('language', language);
    return form;
  };
  const json = await http.json(endpoint(apiBase, 'audio/transcriptions'), () => ({
    method: 'POST',
    headers: apiKey ? { authorization: `Bearer ${apiKey}` } : ({} as Record<string, string>),
    body: body(),
  }));
  return textField(http, json, json.text);
}

async function openRouter(http: Http, { apiKey, apiBase, model, language, audio }: TranscribeRequest) {
  const ext = extensionOf(audio.name);
  const body = {
    model,
    input_audio: { data: base64(audio.bytes), format: FORMAT_ALIASES[ext] ?? ext },
    ...(language ? { language } : {}),
  };
  const json = await http.json(endpoint(apiBase, 'audio/transcriptions'), () => jsonInit(apiKey, body));
  return textField(http, json, json.text);
}

async function mimo(http: Http, { apiKey, apiBase, model, language, audio }: TranscribeRequest) {
  const body = {
    model,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'input_audio', input_audio: { data: `data:${audio.mimeType};base64,${base64(audio.bytes)}` } },
        ],
      },
    ],
    ...(language ? { asr_options: { language } } : {}),
  };
  const json = await http.json(endpoint(apiBase, 'chat/completions'), () => jsonInit(apiKey, body));
  const choices = json.choices as { message?: { content?: unknown } }[] | undefined;
  return textField(http, json, Array.isArray(choices) ? choices[0]?.message?.content : undefined);
}

async function stepFun(http: Http, { apiKey, apiBase, model, language, audio }: TranscribeRequest) {
  const ext = extensionOf(audio.name);
  const body = {
    audio: {
      data: base64(audio.bytes),
      input: {
        transcription: { model, enable_itn: true, ...(language ? { language } : {}) },
        format: { type: FORMAT_ALIASES[ext] === 'ogg' ? 'ogg' : ext },
      },
    },
  };
  const url = endpoint(apiBase, 'audio/asr/sse');
  const response = await http.request(url, () => {
    const init = jsonInit(apiKey, body);
    return { ...init, headers: { ...init.headers, accept: 'text/event-stream' } };
  });
  const events = await response.text();
  for (const line of events.split(/\r?\n/)) {
    if (!line.startsWith('data:')) continue;
    let event: { type?: unknown; text?: unknown; message?: unknown };
    try {
      event = JSON.parse(line.slice(5).trim()) as typeof event;
    } catch {
      continue;
    }
    if (event.type === 'error')
      return fail(`stepfun transcription failed: ${String(event.message ?? 'unknown error')}`);
    if (event.type === 'transcript.text.done') return { ok: true as const, text: String(event.text ?? '').trim() };
  }
  return fail('stepfun transcription failed: the stream ended without a final transcript');
}

async function assemblyAi(http: Http, { apiKey, apiBase, model, language, audio }: TranscribeRequest) {
  const auth = { authorization: apiKey };
  const upload = await http.json(endpoint(apiBase, 'upload'), () => ({
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/octet-stream' },
    body: audio.bytes,
  }));
  if (typeof upload.upload_url !== 'string' || !upload.upload_url)
    return fail('assemblyai transcription failed: the upload answer has no upload_url');
  const speechModels = model
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  const body = {
    audio_url: upload.upload_url,
    ...(speechModels.length ? { speech_models: speechModels } : {}),
    ...(language ? { language_code: language } : {}),
  };
  const transcriptUrl = endpoint(apiBase, 'transcript');
  const created = await http.json(transcriptUrl, () => jsonInit(apiKey, body, false));
  if (typeof created.id !== 'string' || !created.id)
    return fail('assemblyai transcription failed: the transcript answer has no id');
  const pollUrl = `${transcriptUrl}/${encodeURIComponent(created.id)}`;
  const attempts = http.options.pollAttempts ?? 60;
  for (let i = 0; i < attempts; i++) {
    const state = await http.json(pollUrl, () => ({ method: 'GET', headers: auth }));
    const status = String(state.status ?? '').toLowerCase();
    if (status === 'completed') return textField(http, state, state.text);
    if (status === 'error' || status === 'failed')
      return fail(`assemblyai transcription failed: ${String(state.error ?? status)}`);
    if (i < attempts - 1) await http.sleep(http.options.pollIntervalMs ?? 2000);
  }
  return fail('assemblyai transcription failed: still not done after polling');
}

function jsonInit(apiKey: string, body: unknown, bearer = true): RequestInit & { headers: Record<string, string> } {
  return {
    method: 'POST',
    headers: {
      ...(apiKey ? { authorization: bearer ? `Bearer ${apiKey}` : apiKey } : {}),
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  };
}

function textField(http: Http, _json: Record<string, unknown>, value: unknown): TranscribeResult {
  if (typeof value !== 'string') return fail(`${http.label} transcription failed: the answer has no text`);
  return { ok: true, text: value.trim() };
}

const fail = (error: string): TranscribeResult => ({ ok: false, error });

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

class HttpFailure extends Error {}

/** fetch with retries on transient failures; HTTP errors become HttpFailure with the status and a body excerpt. */
export class Http {
  readonly sleep: (ms: number) => Promise<void>;
  private readonly fetchImpl: typeof globalThis.fetch;

  constructor(
    readonly options: HttpOptions,
    readonly label: string,
  ) {
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    const sleep = options.sleep ?? abortableSleep;
    this.sleep = (ms) => sleep(ms, options.signal);
  }

  async request(url: string, init: () => RequestInit): Promise<Response> {
    const delays = this.options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS;
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.fetchImpl(url, {
          ...init(),
          ...(this.options.signal ? { signal: this.options.signal } : {}),
        });
      } catch (err) {
        if (this.options.signal?.aborted || attempt >= delays.length)
          throw new HttpFailure(`${this.label} request failed: ${errorMessage(err)}`);
        await this.sleep(delays[attempt] ?? 0);
        continue;
      }
      if (response.ok) return response;
      if (RETRYABLE.has(response.status) && attempt < delays.length) {
        await response.body?.cancel().catch(() => {});
        await this.sleep(delays[attempt] ?? 0);
        continue;
      }
      const excerpt = (await response.text().catch(() => '')).replace(/\s+/g, ' ').trim().slice(0, 300);
      throw new HttpFailure(`${this.label} answered HTTP ${response.status}${excerpt ? `: ${excerpt}` : ''}`);
    }
  }

  async json(url: string, init: () => RequestInit): Promise<Record<string, unknown>> {
    const response = await this.request(url, init);
    let body: unknown;
    try {
      body = await response.json();
    } catch (err) {
      throw new HttpFailure(`${this.label} answered with malformed JSON: ${errorMessage(err)}`);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new HttpFailure(`${this.label} answered with an unexpected shape`);
    return body as Record<string, unknown>;
  }
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
