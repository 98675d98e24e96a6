import { useEffect, useRef, useState } from 'react';
import { useI18n } from '../i18n/react.js';

/** nanobot's WebUI recording limit (`transcription.maxDurationSec` default): longer recordings stop by themselves. */
const MAX_RECORDING_MS = 120_000;

export interface VoiceButtonProps {
  disabled: boolean;
  /** Sends the recording (a data URL) as `transcribe_audio`; resolves with the text, rejects with the detail code. */
  transcribe(dataUrl: string, durationMs: number): Promise<string>;
  onText(text: string): void;
  onProblem(message: string): void;
}

type State = 'idle' | 'recording' | 'transcribing';

/** The composer's microphone: click to record, click again to stop; the transcript goes into the draft. */
export function VoiceButton({ disabled, transcribe, onText, onProblem }: VoiceButtonProps) {
  const { t } = useI18n();
  const [state, setState] = useState<State>('idle');
  const recorder = useRef<MediaRecorder | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  useEffect(
    () => () => {
      clearTimeout(timer.current);
      recorder.current?.stream.getTracks().forEach((track) => {
        track.stop();
      });
    },
    [],
  );

  const problemFor = (detail: string): string => {
    if (detail === 'not_configured' || detail === 'disabled') return t('voice.notConfigured');
    if (detail === 'empty') return t('voice.empty');
    if (detail === 'duration' || detail === 'size') return t('voice.tooLong');
    return t('voice.failed', { detail });
  };

  const start = async () => {
    if (typeof MediaRecorder === 'undefined' || !navigator.mediaDevices?.getUserMedia) {
      onProblem(t('voice.unsupported'));
      return;
    }
    let stream: MediaStream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch {
      onProblem(t('voice.denied'));
      return;
    }
    const chunks: Blob[] = [];
    const media = new MediaRecorder(stream);
    const startedAt = Date.now();
    media.ondataavailable = (event) => {
      if (event.data.size > 0) chunks.push(event.data);
    };
    media.onstop = () => {
      clearTimeout(timer.current);
      stream.getTracks().forEach((track) => {
        track.stop();
      });
      recorder.current = null;
      const blob = new Blob(chunks, { type: media.mimeType || 'audio/webm' });
      setState('transcribing');
      const reader = new FileReader();
      reader.onload = () => {
        transcribe(String(reader.result), Date.now() - startedAt)
          .then((text) => onText(text))
          .catch((err: Error) => onProblem(problemFor(err.message)))
          .finally(() => setState('idle'));
      };
      reader.onerror = () => {
        onProblem(problemFor('decode'));
        setState('idle');
      };
      reader.readAsDataURL(blob);
    };
    recorder.current = media;
    media.start();
    setState('recording');
    timer.current = setTimeout(() => media.stop(), MAX_RECORDING_MS);
  };

  const label =
    state === 'recording' ? t('voice.stop') : state === 'transcribing' ? t('voice.transcribing') : t('voice.record');
  return (
    <button
      type="button"
      className={`icon-button voice${state === 'recording' ? ' recording' : ''}`}
      aria-label={label}
      aria-pressed={state === 'recording'}
      title={label}
      disabled={disabled || state === 'transcribing'}
      onClick={() => (state === 'recording' ? recorder.current?.stop() : void start())}
    >
      <svg viewBox="0 0 24 24" aria-hidden="true">
        <rect x="9" y="3" width="6" height="11" rx="3" />
        <path d="M5 11a7 7 0 0 0 14 0M12 18v3" />
      </svg>
    </button>
  );
}
