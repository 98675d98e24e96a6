/**
 * One automation in the list: its name, when it runs, its next and last run, and what the user can do with it —
 * switch it on or off, run it now, edit it, delete it (after a question). nanobot's protected system jobs (Dream,
 * heartbeat) are shown but not changed; a local trigger is run by its command, so it has no "Run now".
 */
import { useId } from 'react';
import { BusyButton, Toggle } from '../controls.js';
import { usePageText } from '../text.js';
import { automationsMessages } from './messages.js';
import { type Automation, splitInterval } from './model.js';

export interface JobActions {
  toggle(job: Automation, enabled: boolean): Promise<void>;
  run(job: Automation): Promise<void>;
  edit(job: Automation): void;
  remove(job: Automation): void;
  onError(message: string): void;
}

function useDescribe() {
  const { t, tx, locale, number } = usePageText(automationsMessages);
  const instant = (ms: number, tz?: string | null) =>
    new Intl.DateTimeFormat(locale, {
      dateStyle: 'medium',
      timeStyle: 'short',
      ...(tz ? { timeZone: tz, timeZoneName: 'short' } : {}),
    }).format(new Date(ms));
  const schedule = (job: Automation) => {
    const s = job.schedule;
    if (s.kind === 'every' && s.every_ms) {
      const { count, unit } = splitInterval(s.every_ms);
      const interval = number(count, { style: 'unit', unit, unitDisplay: 'long' });
      return t('automations.sched.every', { interval });
    }
    if (s.kind === 'cron') return tx('automations.sched.cron', { expr: <code>{s.expr}</code>, tz: s.tz || '—' });
    if (s.kind === 'at' && s.at_ms) return t('automations.sched.at', { time: instant(s.at_ms, s.tz) });
    return tx('automations.sched.trigger', { command: <code>{job.trigger?.command ?? ''}</code> });
  };
  const last = (job: Automation) => {
    const { last_status: status, last_run_at_ms: at, last_error: error } = job.state;
    if (!status) return t('automations.last.never');
    const time = at ? instant(at) : '—';
    if (status === 'ok') return t('automations.last.ok', { time });
    if (status === 'silent') return t('automations.last.silent', { time });
    return t('automations.last.error', { time, error: error || status });
  };
  const next = (job: Automation) => {
    if (!job.enabled) return t('automations.next.off');
    const at = job.state.next_run_at_ms;
    return at ? instant(at) : t('automations.next.none');
  };
  const where = (job: Automation) => {
    const origin = job.origin;
    if (!origin) return t('automations.where.none');
    if (origin.channel !== 'websocket') return t('automations.where.channel', { channel: origin.channel });
    return origin.title || origin.preview || origin.chat_id || '';
  };
  return { schedule, last, next, where };
}

export function JobRow({ job, actions, showChat }: { job: Automation; actions: JobActions; showChat: boolean }) {
  const { t } = usePageText(automationsMessages);
  const describe = useDescribe();
  const titleId = useId();
  const trigger = job.kind === 'local_trigger';
  const failed = job.state.last_status === 'error';
  return (
    <li className="automations-job" data-testid={`automation-${job.id}`}>
      <article aria-labelledby={titleId}>
        <div className="automations-job-head">
          <h4 id={titleId}>{job.name}</h4>
          {job.protected && <span className="automations-badge">{t('automations.system')}</span>}
          {trigger && <span className="automations-badge">{t('automations.trigger')}</span>}
          {!trigger && job.payload.kind === 'agent_turn' && !job.protected && (
            <span className="automations-badge">{t('automations.agentTask')}</span>
          )}
        </div>
        <p className="automations-message">{job.payload.message}</p>
        <dl className="automations-facts">
          <dt>{t('automations.when')}</dt>
          <dd>{describe.schedule(job)}</dd>
          <dt>{t('automations.nextRun')}</dt>
          <dd>{describe.next(job)}</dd>
          <dt>{t('automations.lastRun')}</dt>
          <dd className={failed ? 'automations-failed' : undefined} data-testid="automation-last">
            {describe.last(job)}
          </dd>
          {showChat && (
            <>
              <dt>{t('automations.where')}</dt>
              <dd>{describe.where(job)}</dd>
            </>
          )}
        </dl>
        {job.protected ? (
          <p className="field-help">{t('automations.systemHelp')}</p>
        ) : (
          <div className="automations-actions">
            <Toggle
              label={t('automations.active')}
              checked={job.enabled}
              onChange={(enabled) =>
                void actions.toggle(job, enabled).catch((err: Error) => actions.onError(err.message))
              }
            />
            {!trigger && (
              <BusyButton
                onClick={() => actions.run(job)}
                onError={actions.onError}
                disabled={!job.enabled}
                label={t('automations.runNamed', { name: job.name })}
              >
                {t('automations.run')}
              </BusyButton>
            )}
            <button
              type="button"
              className="button button-secondary"
              aria-label={t('automations.editNamed', { name: job.name })}
              onClick={() => actions.edit(job)}
            >
              {t('automations.edit')}
            </button>
            <button
              type="button"
              className="button button-danger"
              aria-label={t('automations.deleteNamed', { name: job.name })}
              onClick={() => actions.remove(job)}
            >
              {t('automations.delete')}
            </button>
          </div>
        )}
      </article>
    </li>
  );
}
