/**
 * The add/edit form of a job: its name, its message, and when it runs — every N minutes/hours/days, a cron
 * expression in a timezone, or once at a date and time in a timezone. A new job also chooses whether the agent works
 * on the message (an agent task) or the message is sent as it is (a reminder); the API cannot change that later.
 */
import { type FormEvent, useId, useMemo, useState } from 'react';
import { Notice, TextField } from '../controls.js';
import { usePageText } from '../text.js';
import { automationsMessages } from './messages.js';
import {
  type Automation,
  type IntervalUnit,
  instantToWallTime,
  type ScheduleValue,
  splitInterval,
  timezones,
  UNITS,
  wallTimeToInstant,
} from './model.js';

export interface JobFormValues {
  name: string;
  message: string;
  schedule: ScheduleValue;
  agent: boolean;
}

type Kind = 'every' | 'cron' | 'at';

function initialState(job: Automation | undefined, timezone: string) {
  const s = job?.schedule;
  const split = s?.kind === 'every' && s.every_ms ? splitInterval(s.every_ms) : { count: 1, unit: 'hour' as const };
  const unit: IntervalUnit = split.unit === 'second' ? 'minute' : split.unit;
  const count = split.unit === 'second' ? Math.max(1, Math.round(split.count / 60)) : split.count;
  const tz = s?.tz || timezone;
  const soon = Date.now() + UNITS.hour;
  return {
    kind: (s?.kind === 'cron' || s?.kind === 'at' ? s.kind : 'every') as Kind,
    count: String(count),
    unit,
    expr: s?.expr ?? '0 9 * * *',
    tz,
    at: instantToWallTime(s?.kind === 'at' && s.at_ms ? s.at_ms : soon, tz),
  };
}

export function JobForm({
  job,
  timezone,
  onSubmit,
  onCancel,
}: {
  /** The job being edited; none = a new job. */
  job?: Automation;
  /** The agent's timezone (agents.defaults.timezone): the picker's default. */
  timezone: string;
  onSubmit(values: JobFormValues): Promise<void>;
  onCancel(): void;
}) {
  const { t } = usePageText(automationsMessages);
  const id = useId();
  const trigger = job?.kind === 'local_trigger';
  const [name, setName] = useState(job?.name ?? '');
  const [message, setMessage] = useState(job?.payload.message ?? '');
  const [agent, setAgent] = useState(true);
  const [when, setWhen] = useState(() => initialState(job, timezone));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const zones = useMemo(() => timezones([timezone, when.tz]), [timezone, when.tz]);
  const set = (change: Partial<typeof when>) => setWhen((current) => ({ ...current, ...change }));

  const schedule = (): ScheduleValue | string => {
    if (when.kind === 'every') {
      const count = Number(when.count);
      if (!Number.isInteger(count) || count < 1) return t('automations.form.badInterval');
      return { kind: 'every', every_ms: count * UNITS[when.unit] };
    }
    if (when.kind === 'cron') {
      if (!when.expr.trim()) return t('automations.form.badCron');
      return { kind: 'cron', expr: when.expr.trim(), tz: when.tz };
    }
    const at = wallTimeToInstant(when.at, when.tz);
    if (at === null) return t('automations.form.badTime');
    if (at <= Date.now()) return t('automations.form.pastTime');
    return { kind: 'at', at_ms: at };
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const value = trigger ? job?.schedule : schedule();
    if (typeof value === 'string') return setError(value);
    if (!trigger && !message.trim()) return setError(t('automations.form.noMessage'));
    setBusy(true);
    setError(null);
    try {
      await onSubmit({ name: name.trim(), message: message.trim(), schedule: value as ScheduleValue, agent });
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="automations-form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h4 id={`${id}-title`}>{job ? t('automations.form.editTitle') : t('automations.form.addTitle')}</h4>
      <TextField
        label={t('automations.form.name')}
        value={name}
        onChange={setName}
        help={job ? undefined : t('automations.form.nameHelp')}
      />
      {!trigger && (
        <>
          <div className="field">
            <label htmlFor={`${id}-message`}>{t('automations.form.message')}</label>
            <textarea
              id={`${id}-message`}
              rows={3}
              value={message}
              required
              onChange={(event) => setMessage(event.target.value)}
            />
          </div>
          {!job && (
            <fieldset className="automations-choice">
              <legend>{t('automations.form.what')}</legend>
              <label>
                <input type="radio" name={`${id}-agent`} checked={agent} onChange={() => setAgent(true)} />
                {t('automations.form.agent')}
              </label>
              <label>
                <input type="radio" name={`${id}-agent`} checked={!agent} onChange={() => setAgent(false)} />
                {t('automations.form.reminder')}
              </label>
            </fieldset>
          )}
          <fieldset className="automations-choice">
            <legend>{t('automations.form.when')}</legend>
            <label>
              <input
                type="radio"
                name={`${id}-kind`}
                checked={when.kind === 'every'}
                onChange={() => set({ kind: 'every' })}
              />
              {t('automations.form.kindEvery')}
            </label>
            <label>
              <input
                type="radio"
                name={`${id}-kind`}
                checked={when.kind === 'cron'}
                onChange={() => set({ kind: 'cron' })}
              />
              {t('automations.form.kindCron')}
            </label>
            <label>
              <input
                type="radio"
                name={`${id}-kind`}
                checked={when.kind === 'at'}
                onChange={() => set({ kind: 'at' })}
              />
              {t('automations.form.kindAt')}
            </label>
          </fieldset>
          {when.kind === 'every' && (
            <div className="automations-row">
              <TextField
                label={t('automations.form.count')}
                type="number"
                value={when.count}
                onChange={(count) => set({ count })}
              />
              <div className="field">
                <label htmlFor={`${id}-unit`}>{t('automations.form.unit')}</label>
                <select
                  id={`${id}-unit`}
                  value={when.unit}
                  onChange={(event) => set({ unit: event.target.value as IntervalUnit })}
                >
                  <option value="minute">{t('automations.form.minutes')}</option>
                  <option value="hour">{t('automations.form.hours')}</option>
                  <option value="day">{t('automations.form.days')}</option>
                </select>
              </div>
            </div>
          )}
          {when.kind === 'cron' && (
            <TextField
              label={t('automations.form.expr')}
              value={when.expr}
              onChange={(expr) => set({ expr })}
              help={t('automations.form.exprHelp')}
            />
          )}
          {when.kind === 'at' && (
            <div className="field">
              <label htmlFor={`${id}-at`}>{t('automations.form.at')}</label>
              <input
                id={`${id}-at`}
                type="datetime-local"
                value={when.at}
                onChange={(event) => set({ at: event.target.value })}
              />
            </div>
          )}
          {when.kind !== 'every' && (
            <div className="field">
              <label htmlFor={`${id}-tz`}>{t('automations.form.tz')}</label>
              <select id={`${id}-tz`} value={when.tz} onChange={(event) => set({ tz: event.target.value })}>
                {zones.map((zone) => (
                  <option key={zone} value={zone}>
                    {zone}
                  </option>
                ))}
              </select>
            </div>
          )}
        </>
      )}
      {error && <Notice kind="error">{error}</Notice>}
      <div className="automations-form-actions">
        <button type="button" className="button button-secondary" onClick={onCancel}>
          {t('automations.form.cancel')}
        </button>
        <button type="submit" className="button button-primary" disabled={busy} aria-busy={busy || undefined}>
          {job ? t('automations.form.save') : t('automations.form.add')}
        </button>
      </div>
    </form>
  );
}
