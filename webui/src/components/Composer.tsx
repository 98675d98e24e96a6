import { type FormEvent, type KeyboardEvent, useEffect, useRef, useState } from 'react';
import { useI18n } from '../i18n/react.js';
import { Icon } from './Icon.js';
import { optionId, PALETTE_ID, paletteMatches, type SlashCommand, SlashPalette } from './SlashPalette.js';
import { VoiceButton } from './VoiceButton.js';

export interface ComposerProps {
  busy: boolean;
  disabled: boolean;
  /** Resolves once sent; rejects with a message to show (the draft is kept). */
  onSend(text: string, files: File[]): Promise<void>;
  onStop(): void;
  /** Text put in from outside (a suggestion). */
  prefill?: { text: string; at: number };
  /** The gateway's slash commands, offered while the message starts with `/`. */
  commands?: readonly SlashCommand[];
  /** Voice input (`transcribe_audio`): the microphone button shows when given. */
  onTranscribe?(dataUrl: string, durationMs: number): Promise<string>;
}

const MAX_FILES = 10;

/** Image mode sends the message with the built-in image-generation skill named (`$image-generation …`). */
export const IMAGE_SKILL_PREFIX = '$image-generation ';

export function Composer({ busy, disabled, onSend, onStop, prefill, commands = [], onTranscribe }: ComposerProps) {
  const { t } = useI18n();
  const [text, setText] = useState('');
  const [files, setFiles] = useState<File[]>([]);
  const [sending, setSending] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [imageMode, setImageMode] = useState(false);
  const area = useRef<HTMLTextAreaElement>(null);
  const picker = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (!prefill) return;
    setText(prefill.text);
    area.current?.focus();
  }, [prefill]);

  // Grow with the text, up to a limit.
  const resize = (el: HTMLTextAreaElement | null) => {
    if (!el) return;
    el.style.height = 'auto';
    el.style.height = `${Math.min(el.scrollHeight, 220)}px`;
  };

  // The palette: open while the draft is `/name`, unless Escape closed it for this very draft.
  const [activeOption, setActiveOption] = useState(0);
  const [dismissed, setDismissed] = useState<string | null>(null);
  const matches = dismissed === text ? null : paletteMatches(commands, text);
  const paletteOpen = matches !== null && commands.length > 0;

  const hasContent = text.trim() !== '' || files.length > 0;
  const canSend = !disabled && !sending && hasContent;
  // Enter pressed while the page is still connecting (or reconnecting) is not lost: the message goes once it can.
  const [waiting, setWaiting] = useState(false);

  const submit = async (event?: FormEvent, override?: string) => {
    event?.preventDefault();
    const content = override ?? text;
    if (!canSend && override === undefined) {
      setWaiting(disabled && !sending && hasContent);
      return;
    }
    setWaiting(false);
    setSending(true);
    setProblem(null);
    try {
      // A slash command is never wrapped: /stop in image mode is still /stop.
      const trimmed = content.trim();
      await onSend(imageMode && trimmed && !trimmed.startsWith('/') ? IMAGE_SKILL_PREFIX + trimmed : trimmed, files);
      setText('');
      setFiles([]);
      if (area.current) area.current.style.height = 'auto';
    } catch (err) {
      setProblem((err as Error).message);
    } finally {
      setSending(false);
      area.current?.focus();
    }
  };

  // biome-ignore lint/correctness/useExhaustiveDependencies: only the moment the composer becomes usable matters.
  useEffect(() => {
    if (waiting && !disabled) void submit();
  }, [waiting, disabled]);

  const edit = (value: string) => {
    setText(value);
    setActiveOption(0);
    if (value !== dismissed) setDismissed(null);
  };

  /** A command taking arguments goes into the box to finish; one without is sent (Tab only fills it in). */
  const pick = (command: SlashCommand, send: boolean) => {
    if (send && !command.accepts_args && !disabled && !sending) {
      void submit(undefined, command.command);
      return;
    }
    edit(command.accepts_args ? `${command.command} ` : command.command);
    if (!command.accepts_args) setDismissed(command.command);
    area.current?.focus();
  };

  const onPaletteKey = (event: KeyboardEvent<HTMLTextAreaElement>, options: SlashCommand[]): boolean => {
    const count = options.length;
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      if (count) setActiveOption((activeOption + (event.key === 'ArrowDown' ? 1 : count - 1)) % count);
      return true;
    }
    if (event.key === 'Escape') {
      setDismissed(text);
      // The palette takes this Escape: nothing else (a drawer, a panel) closes with it.
      event.stopPropagation();
      return true;
    }
    const chosen = options[Math.min(activeOption, count - 1)];
    if ((event.key === 'Enter' && !event.shiftKey) || event.key === 'Tab') {
      if (!chosen) return event.key === 'Enter';
      pick(chosen, event.key === 'Enter');
      return true;
    }
    return false;
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (paletteOpen && matches && !event.nativeEvent.isComposing && onPaletteKey(event, matches)) {
      event.preventDefault();
      return;
    }
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void submit();
    }
  };

  return (
    <form className="composer" onSubmit={submit}>
      {problem && (
        <div className="composer-problem" role="alert">
          {problem}
        </div>
      )}
      {files.length > 0 && (
        <ul className="pending-files" aria-label={t('composer.attachments')}>
          {files.map((file, i) => (
            <li key={`${file.name}-${file.size}-${file.lastModified}`} className="chip">
              <Icon name="file" className="inline-icon" /> {file.name}
              <button
                type="button"
                className="chip-remove"
                aria-label={t('composer.removeFile', { name: file.name })}
                onClick={() => setFiles(files.filter((_, j) => j !== i))}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      {paletteOpen && matches && (
        <SlashPalette
          matches={matches}
          active={Math.min(activeOption, Math.max(0, matches.length - 1))}
          onPick={(command) => pick(command, false)}
        />
      )}
      <div className="composer-row">
        <button
          type="button"
          className="icon-button"
          aria-label={t('composer.attach')}
          title={t('composer.attach')}
          disabled={disabled}
          onClick={() => picker.current?.click()}
        >
          <svg viewBox="0 0 24 24" aria-hidden="true">
            <path d="M16.5 6.5 8.4 14.6a2 2 0 0 0 2.8 2.8l8.5-8.5a4 4 0 0 0-5.7-5.7l-8.8 8.8a6 6 0 0 0 8.5 8.5l7.1-7.1" />
          </svg>
        </button>
        <button
          type="button"
          className={`icon-button${imageMode ? ' active' : ''}`}
          aria-label={t('composer.imageMode')}
          title={t('composer.imageMode')}
          aria-pressed={imageMode}
          disabled={disabled}
          onClick={() => {
            setImageMode(!imageMode);
            area.current?.focus();
          }}
        >
          <svg viewBox="0 0 24 24" aria-hidden="true">
            <rect x="3.5" y="4.5" width="17" height="15" rx="2" />
            <circle cx="9" cy="10" r="1.8" />
            <path d="m4 18 5.5-5.5 4 4 2.5-2.5 4.5 4.5" />
          </svg>
        </button>
        <input
          ref={picker}
          type="file"
          multiple
          hidden
          aria-hidden="true"
          tabIndex={-1}
          onChange={(event) => {
            const picked = Array.from(event.target.files ?? []);
            setFiles([...files, ...picked].slice(0, MAX_FILES));
            event.target.value = '';
          }}
        />
        <label htmlFor="composer-input" className="sr-only">
          {t('composer.message')}
        </label>
        <textarea
          id="composer-input"
          ref={area}
          rows={1}
          value={text}
          placeholder={
            disabled ? t('composer.connecting') : imageMode ? t('composer.imagePlaceholder') : t('composer.placeholder')
          }
          title={t('composer.keys')}
          aria-autocomplete="list"
          aria-controls={paletteOpen && matches?.length ? PALETTE_ID : undefined}
          aria-activedescendant={
            paletteOpen && matches?.length ? optionId(Math.min(activeOption, matches.length - 1)) : undefined
          }
          onChange={(event) => {
            edit(event.target.value);
            resize(event.target);
          }}
          onKeyDown={onKeyDown}
        />
        {onTranscribe && (
          <VoiceButton
            disabled={disabled || sending}
            transcribe={onTranscribe}
            onText={(heard) => {
              setProblem(null);
              edit(text.trim() ? `${text.trimEnd()} ${heard}` : heard);
              area.current?.focus();
            }}
            onProblem={setProblem}
          />
        )}
        {busy ? (
          <button
            type="button"
            className="send stop"
            aria-label={t('composer.stop')}
            title={t('composer.stopHint')}
            onClick={onStop}
          >
            <svg viewBox="0 0 24 24" aria-hidden="true">
              <rect x="7" y="7" width="10" height="10" rx="1.5" />
            </svg>
          </button>
        ) : (
          <button
            type="submit"
            className="send"
            aria-label={t('composer.send')}
            title={t('composer.send')}
            disabled={!canSend}
          >
            <svg viewBox="0 0 24 24" aria-hidden="true">
              <path d="M12 19V5M5 12l7-7 7 7" />
            </svg>
          </button>
        )}
      </div>
    </form>
  );
}
