/**
 * A failed turn as an error, not as an answer: a title for its class (the gateway's `kind`), what the provider said,
 * what to do about it (the gateway's hint, with settings and commands set as code), and the way out: try again, or
 * the settings page where the fix is made.
 */
import type { ReactNode } from 'react';
import { type Translator, useI18n } from '../i18n/react.js';
import type { Block } from '../state.js';
import { Icon } from './Icon.js';

/** The kinds whose fix is a provider setting (key, credit, address, model name): the note links to it. */
const FIXED_IN_MODELS = new Set(['auth', 'quota', 'network', 'bad_request']);

function errorTitle(t: Translator['t'], kind: string | undefined): string {
  switch (kind) {
    case 'auth':
      return t('error.auth');
    case 'quota':
      return t('error.quota');
    case 'rate_limit':
      return t('error.rateLimit');
    case 'timeout':
      return t('error.timeout');
    case 'network':
      return t('error.network');
    case 'server':
      return t('error.server');
    case 'context_overflow':
      return t('error.contextOverflow');
    case 'bad_request':
      return t('error.badRequest');
    default:
      return t('error.generic');
  }
}

/** Config paths (`providers.custom.apiKey`), variables (`NANOBOT_LLM_TIMEOUT_S`) and commands (`/new`) as code. */
const CODE = /([a-z]\w+(?:\.\w+)+|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|(?<![\w/])\/[a-z][\w-]*)/g;

function withCode(text: string): ReactNode[] {
  // biome-ignore lint/suspicious/noArrayIndexKey: the pieces of one fixed hint never move
  return text.split(CODE).map((piece, i) => (i % 2 === 1 ? <code key={i}>{piece}</code> : piece));
}

export function ErrorNote({
  block,
  onRetry,
}: {
  block: Extract<Block, { type: 'note' }>;
  /** Sends the question again (only on the chat's last answer, once no turn runs). */
  onRetry?: () => void;
}) {
  const { t } = useI18n();
  const settings = block.kind !== undefined && FIXED_IN_MODELS.has(block.kind);
  return (
    <div className="note error" role="alert" data-testid="error-note">
      <div className="note-title">
        <Icon name="alert" className="note-icon" />
        {errorTitle(t, block.kind)}
      </div>
      <div className="note-text">{block.text}</div>
      {block.hint && (
        <div className="note-hint">
          <span className="note-hint-label">{t('error.fix')}</span> {withCode(block.hint)}
        </div>
      )}
      {(onRetry || settings) && (
        <div className="note-actions">
          {onRetry && (
            <button type="button" className="button button-secondary" onClick={onRetry}>
              <Icon name="retry" className="inline-icon" /> {t('message.retry')}
            </button>
          )}
          {settings && (
            <a className="button button-secondary" href="#settings/models">
              {t('error.openModels')}
            </a>
          )}
        </div>
      )}
    </div>
  );
}
