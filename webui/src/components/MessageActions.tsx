/**
 * The small row under a message: copy it; for a question, edit it (the chat forks just before it, as nanobot's
 * WebUI does, and the question comes back into the message box); for the last answer, ask again.
 */
import { useEffect, useState } from 'react';
import { useI18n } from '../i18n/react.js';
import { copyText } from '../markdown.js';
import type { Item } from '../state.js';
import { Icon } from './Icon.js';

/** The answer as the reader saw it: its text parts in order (reasoning, tool cards and notes left out). */
export function answerText(item: Extract<Item, { kind: 'assistant' }>): string {
  return item.blocks
    .flatMap((block) => (block.type === 'text' ? [block.text.trim()] : []))
    .filter(Boolean)
    .join('\n\n');
}

function CopyButton({ text, label }: { text: string; label: string }) {
  const { t } = useI18n();
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    if (!copied) return;
    const timer = setTimeout(() => setCopied(false), 1500);
    return () => clearTimeout(timer);
  }, [copied]);
  return (
    <>
      <button
        type="button"
        className="icon-button small"
        aria-label={label}
        title={label}
        onClick={() => void copyText(text).then(() => setCopied(true))}
      >
        <Icon name="copy" />
      </button>
      <span className="sr-only" role="status">
        {copied ? t('chat.copied') : ''}
      </span>
      {copied && (
        <span className="msg-copied" aria-hidden="true">
          {t('chat.copied')}
        </span>
      )}
    </>
  );
}

export function UserActions({ text, onEdit }: { text: string; onEdit?: () => void }) {
  const { t } = useI18n();
  return (
    <div className="msg-actions">
      <CopyButton text={text} label={t('message.copyQuestion')} />
      {onEdit && (
        <button
          type="button"
          className="icon-button small"
          aria-label={t('message.edit')}
          title={t('message.edit')}
          onClick={onEdit}
        >
          <Icon name="pencil" />
        </button>
      )}
    </div>
  );
}

export function AssistantActions({
  item,
  onRetry,
}: {
  item: Extract<Item, { kind: 'assistant' }>;
  onRetry?: () => void;
}) {
  const { t } = useI18n();
  const text = answerText(item);
  if (!text && !onRetry) return null;
  return (
    <div className="msg-actions">
      {text && <CopyButton text={text} label={t('message.copyAnswer')} />}
      {onRetry && (
        <button
          type="button"
          className="icon-button small"
          aria-label={t('message.retry')}
          title={t('message.retry')}
          onClick={onRetry}
        >
          <Icon name="retry" />
        </button>
      )}
    </div>
  );
}
