import { useEffect, useState } from 'react';
import type { StatusReport } from '../../../src/channels/websocket/frames.js';
import type { Api } from '../api.js';

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
  const [status, setStatus] = useState<StatusReport | null>(null);
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
    <aside className="status-panel" aria-label="Status" data-testid="status-panel">
      <div className="panel-head">
        <h2>Status</h2>
        <button type="button" className="icon-button" aria-label="Close status" onClick={onClose}>
          ×
        </button>
      </div>
      {error && <p className="note error">{error}</p>}
      {!status && !error && <p className="muted">Loading…</p>}
      {status && (
        <div className="panel-body">
          <dl className="facts">
            <dt>Model</dt>
            <dd>
              <code>{status.model}</code>
            </dd>
            <dt>Provider</dt>
            <dd>{status.provider}</dd>
          </dl>
          <h3>Context</h3>
          {status.context ? (
            <>
              <meter className="meter" min={0} max={100} value={share} aria-label="Context used" />
              <p className="muted">
                ~{status.context.used.toLocaleString()} of {status.context.window.toLocaleString()} tokens ({share}%)
              </p>
            </>
          ) : (
            <p className="muted">This chat is empty.</p>
          )}
          <h3>Channels</h3>
          <ul className="plain-list">
            {Object.entries(status.channels).map(([name, state]) => (
              <li key={name}>
                <span className={`state-dot ${state}`} aria-hidden="true" /> {name}{' '}
                <span className="muted">{state}</span>
              </li>
            ))}
          </ul>
          <h3>Cron jobs</h3>
          {status.cron.length === 0 ? (
            <p className="muted">None scheduled.</p>
          ) : (
            <ul className="plain-list">
              {status.cron.map((job) => (
                <li key={job.id}>
                  <strong>{job.name}</strong> <span className="muted">{job.schedule}</span>
                  {!job.enabled && <span className="muted"> (paused)</span>}
                  {job.next_run_at && (
                    <div className="muted small">next {new Date(job.next_run_at).toLocaleString()}</div>
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
