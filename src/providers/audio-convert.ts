/**
 * Audio format conversion for transcription providers that cannot take a format (WeChat's AMR, QQ's SILK…): ffmpeg
 * when it is installed, into 16 kHz mono WAV. Failures say what is missing: the binary, or the decoder ffmpeg lacks.
 */
import { spawn } from 'node:child_process';
import { extname } from 'node:path';

export type ConversionResult = { ok: true } | { ok: false; error: string };

export interface ConvertOptions {
  ffmpeg?: string;
  timeoutMs?: number;
}

export function convertToWav(input: string, output: string, options: ConvertOptions = {}): Promise<ConversionResult> {
  const binary = options.ffmpeg ?? 'ffmpeg';
  const format = extname(input).slice(1).toLowerCase() || 'unknown';
  const args = ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', '-i', input, '-ac', '1', '-ar', '16000'];
  return new Promise((resolve) => {
    let stderr = '';
    let settled = false;
    const done = (result: ConversionResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const child = spawn(binary, [...args, '-f', 'wav', output], { stdio: ['ignore', 'ignore', 'pipe'] });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      done({ ok: false, error: `ffmpeg took too long converting the .${format} audio` });
    }, options.timeoutMs ?? 60_000);
    timer.unref?.();
    child.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < 4000) stderr += chunk.toString('utf8');
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      done({
        ok: false,
        error:
          err.code === 'ENOENT'
            ? `converting .${format} audio needs ffmpeg, which is not installed (or not on PATH): install ffmpeg`
            : `ffmpeg could not start: ${err.message}`,
      });
    });
    child.on('close', (code) => {
      if (code === 0) return done({ ok: true });
      const last = stderr.trim().split('\n').at(-1)?.trim() ?? '';
      const decoder = /decoder|codec|Invalid data|could not find/i.test(stderr);
      done({
        ok: false,
        error: decoder
          ? `this ffmpeg has no decoder for .${format} audio (${last || `exit ${code}`})`
          : `ffmpeg failed on the .${format} audio (${last || `exit ${code}`})`,
      });
    });
  });
}
