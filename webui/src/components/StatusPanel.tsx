import { useEffect, useRef, useState } from 'react';
import type { StatusReport } from '../../../src/channels/websocket/frames.js';
import type { Api } from '../api.js';
import { type Translator, useI18n } from '../i18n/react.js';

/** Model, provider, how full this chat's context is, channels and cron jobs. */
export function StatusPanel({
  api,
  chatId,
  version,
  onClose,
}: {
  api: Api;
  chatId: string | null;
  version: number;
  onClose(): void;
}) {
  const { t, number, dateTime } = useI18n();
  const [status, setStatus] = useState<StatusReport | null>(null);
  const panel = useRef<HTMLElement>(null);
  // Opened from the keyboard, the panel takes the focus (on a phone it covers the page); the panel itself, so the
  // Enter that opened it does not also press its close button.
  useEffect(() => panel.current?.focus(), []);
  const [error, setError] = useState<string | null>(null);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `version` changes when a turn ends; the numbers moved.
  useEffect(() => {
    api.status(chatId).then(
      (s) => {
        setStatus(s);
        setError(null);
      },
      (err: Error) => setError(err.message),
    );
  }, [api, chatId, version]);

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => event.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);

  const share = status?.context ? Math.min(100, Math.round((status.context.used / status.context.window) * 100)) : 0;
  return (
    <aside ref={panel} tabIndex={-1} className="status-panel" aria-label={t('status.title')} data-testid="status-panel">
      <div className="panel-head">
        <h2>{t('status.title')}</h2>
        <button type="button" className="icon-button" aria-label={t('status.close')} onClick={onClose}>
          ×
        </button>
      </div>
      {error && <p className="note error">{error}</p>}
      {!status && !error && <p className="muted">{t('status.loading')}</p>}
      {status && (
        <div className="panel-body">
          <dl className="facts">
            <dt>{t('status.model')}</dt>
            <dd>
              <code>{status.model}</code>
            </dd>
            <dt>{t('status.provider')}</dt>
            <dd>{status.provider}</dd>
          </dl>
          <h3>{t('status.context')}</h3>
          {status.context ? (
            <>
              <meter className="meter" min={0} max={100} value={share} aria-label={t('status.contextUsed')} />
              <p className="muted">
                {t('status.tokens', {
                  used: status.context.used,
                  window: status.context.window,
                  share: number(share / 100, { style: 'percent' }),
                })}
              </p>
            </>
          ) : (
            <p className="muted">{t('status.emptyChat')}</p>
          )}
          <h3>{t('status.channels')}</h3>
          <ul className="plain-list">
            {Object.entries(status.channels).map(([name, state]) => (
              <li key={name}>
                <span className={`state-dot ${state}`} aria-hidden="true" /> {name}{' '}
                <span className="muted">{channelState(t, state)}</span>
              </li>
            ))}
          </ul>
          <h3>{t('status.cron')}</h3>
          {status.cron.length === 0 ? (
            <p className="muted">{t('status.noCron')}</p>
          ) : (
            <ul className="plain-list">
              {status.cron.map((job) => (
                <li key={job.id}>
                  <strong>{job.name}</strong> <span className="muted">{job.schedule}</span>
                  {!job.enabled && <span className="muted"> {t('status.paused')}</span>}
                  {job.next_run_at && (
                    <div className="muted small">{t('status.nextRun', { time: dateTime(job.next_run_at) })}</div>
                  )}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </aside>
  );
}

/** A channel's state in the reader's words (one the gateway may add later is shown as it comes). */
function channelState(t: Translator['t'], state: string): string {
  switch (state) {
    case 'starting':
      return t('status.channelStarting');
    case 'running':
      return t('status.channelRunning');
    case 'reconnecting':
      return t('status.channelReconnecting');
    case 'stopped':
      return t('status.channelStopped');
    case 'error':
      return t('status.channelError');
    default:
      return state;
  }
}
