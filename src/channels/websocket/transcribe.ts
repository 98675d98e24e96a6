/**
 * nanobot's WebUI voice input: `transcribe_audio {request_id, data_url, duration_ms}` → `transcription_result
 * {request_id, text}` or `transcription_error {request_id, detail}` with nanobot's details (`invalid_request`,
 * `missing_audio`, `disabled`, `not_configured` + provider, `duration`, `mime`, `size`, `decode`, `empty`, and ours:
 * `failed` with the provider's error). The recording is written to a private temp file, transcribed, deleted.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { VoiceService } from '../../providers/voice.js';
import type { ServerFrame } from './frames.js';

const REQUEST_ID = /^[\s\S]{1,80}$/;
const EXTENSIONS: Record<string, string> = {
  'audio/aac': 'aac',
  'audio/flac': 'flac',
  'audio/m4a': 'm4a',
  'audio/mp4': 'm4a',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'audio/wav': 'wav',
  'audio/webm': 'webm',
  'audio/x-m4a': 'm4a',
  'audio/x-wav': 'wav',
};
const DATA_URL = /^data:([^;,]+)((?:;[^;,]*)*);base64,(.*)$/s;

export async function transcriptionEvent(
  frame: { request_id?: unknown; data_url?: unknown; duration_ms?: unknown },
  voice: VoiceService | undefined,
  dir: string,
): Promise<ServerFrame> {
  const requestId = frame.request_id;
  if (typeof requestId !== 'string' || !REQUEST_ID.test(requestId))
    return { event: 'transcription_error', detail: 'invalid_request' };
  const error = (detail: string, provider?: string): ServerFrame => ({
    event: 'transcription_error',
    request_id: requestId,
    detail,
    ...(provider ? { provider } : {}),
  });
  if (typeof frame.data_url !== 'string' || !frame.data_url) return error('missing_audio');
  if (!voice) return error('not_configured');
  const { transcription: settings } = voice.settings();
  if (!settings.enabled) return error('disabled');
  if (!settings.configured) return error('not_configured', settings.provider);
  if (typeof frame.duration_ms === 'number' && frame.duration_ms > settings.maxDurationSec * 1000 + 1000)
    return error('duration');
  const parsed = DATA_URL.exec(frame.data_url);
  const mime = parsed?.[1]?.trim().toLowerCase() ?? '';
  const ext = EXTENSIONS[mime];
  if (!parsed || !ext) return error('mime');
  const maxBytes = settings.maxUploadMb * 1024 * 1024;
  // base64 is 4 characters per 3 bytes: refuse before decoding what is surely too large.
  if (((parsed[3] ?? '').length * 3) / 4 > maxBytes + 4) return error('size');
  const bytes = Buffer.from(parsed[3] ?? '', 'base64');
  if (bytes.length === 0) return error('decode');
  if (bytes.length > maxBytes) return error('size');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${Date.now()}-${randomBytes(4).toString('hex')}.${ext}`);
  try {
    await writeFile(path, bytes, { mode: 0o600 });
    const result = await voice.transcribeFile(path);
    if (!result.ok)
      return {
        event: 'transcription_error',
        request_id: requestId,
        detail: 'failed',
        provider: settings.provider,
        message: result.error,
      };
    if (!result.text) return error('empty');
    return { event: 'transcription_result', request_id: requestId, text: result.text };
  } finally {
    await rm(path, { force: true });
  }
}
