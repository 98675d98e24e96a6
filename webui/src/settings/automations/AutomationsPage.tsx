/**
 * Settings › Automations: the cron jobs and local triggers of the open chat and of every other chat
 * (`GET /api/webui/automations`, `automation.*` actions), a form to add one to the open chat, and the heartbeat
 * with its HEARTBEAT.md (`GET /api/webui/automations/heartbeat`).
 */
import { useRef, useState } from 'react';
import { ConfirmDialog, LoadedView, Notice, PageHeader, Section, useLoad } from '../controls.js';
import type { SettingsPageProps } from '../pages.js';
import { usePageText } from '../text.js';
import { HeartbeatSection } from './HeartbeatSection.js';
import { JobForm, type JobFormValues } from './JobForm.js';
import { type JobActions, JobRow } from './JobRow.js';
import { automationsMessages } from './messages.js';
import { type Automation, type AutomationsPayload, type HeartbeatPayload, sessionKeyOf } from './model.js';
import './automations.css';

/** After "Run now": how often, and how long, the list is read again to show the run's outcome. */
const RUN_POLL_MS = 1000;
const RUN_POLL_TRIES = 120;

export function AutomationsPage({ client, chatId }: SettingsPageProps) {
  const { t } = usePageText(automationsMessages);
  const list = useLoad(() => client.get<AutomationsPayload>('webui/automations'));
  const heartbeat = useLoad(() => client.get<HeartbeatPayload>('webui/automations/heartbeat'));
  const [jobs, setJobs] = useState<Automation[] | null>(null);
  const [adding, setAdding] = useState(false);
  const [editing, setEditing] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Automation | null>(null);
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const polls = useRef(new Set<string>());
  const timezone = heartbeat.data?.timezone ?? 'UTC';
  const shown = jobs ?? list.data?.jobs ?? [];
  const mine = chatId ? shown.filter((job) => job.origin?.session_key === sessionKeyOf(chatId)) : [];
  const others = shown.filter((job) => !mine.includes(job));

  const apply = (payload: AutomationsPayload) => setJobs(payload.jobs);
  const fail = (text: string) => setNotice({ kind: 'error', text });

  /** Reads the list until the job's last run differs from `before` (the run was recorded), then stops. */
  const watchRun = (id: string, before: number | null | undefined) => {
    if (polls.current.has(id)) return;
    polls.current.add(id);
    let tries = 0;
    const tick = async () => {
      tries += 1;
      const fresh = await client.get<AutomationsPayload>('webui/automations').catch(() => null);
      if (fresh) apply(fresh);
      const job = fresh?.jobs.find((candidate) => candidate.id === id);
      if ((job && job.state.last_run_at_ms !== before) || !job || tries >= RUN_POLL_TRIES) {
        polls.current.delete(id);
        return;
      }
      setTimeout(() => void tick(), RUN_POLL_MS);
    };
    setTimeout(() => void tick(), RUN_POLL_MS);
  };

  const actions: JobActions = {
    toggle: async (job, enabled) => {
      setNotice(null);
      apply(await client.act<AutomationsPayload>(enabled ? 'automation.enable' : 'automation.disable', { id: job.id }));
    },
    run: async (job) => {
      setNotice(null);
      apply(await client.act<AutomationsPayload>('automation.run', { id: job.id }));
      setNotice({ kind: 'ok', text: t('automations.running', { name: job.name }) });
      watchRun(job.id, job.state.last_run_at_ms);
    },
    edit: (job) => {
      setAdding(false);
      setEditing(job.id);
    },
    remove: (job) => setDeleting(job),
    onError: fail,
  };

  const create = async (values: JobFormValues) => {
    if (!chatId) return;
    const made = await client.act<AutomationsPayload>('automation.create', {
      ...(values.name ? { name: values.name } : {}),
      message: values.message,
      schedule: values.schedule,
      chat_id: chatId,
      agent: values.agent,
    });
    apply(made);
    setAdding(false);
    setNotice({ kind: 'ok', text: t('automations.added') });
  };

  const update = async (job: Automation, values: JobFormValues) => {
    const changes =
      job.kind === 'local_trigger'
        ? { name: values.name }
        : { ...(values.name ? { name: values.name } : {}), message: values.message, schedule: values.schedule };
    apply(await client.act<AutomationsPayload>('automation.update', { id: job.id, values: changes }));
    setEditing(null);
    setNotice({ kind: 'ok', text: t('automations.saved') });
  };

  const confirmDelete = async () => {
    const job = deleting;
    setDeleting(null);
    if (!job) return;
    try {
      apply(await client.act<AutomationsPayload>('automation.delete', { id: job.id }));
      setNotice({ kind: 'ok', text: t('automations.deleted', { name: job.name }) });
    } catch (err) {
      fail((err as Error).message);
    }
  };

  const rows = (items: Automation[], showChat: boolean) => (
    <ul className="automations-list">
      {items.map((job) =>
        editing === job.id ? (
          <li key={job.id} className="automations-job">
            <JobForm
              job={job}
              timezone={timezone}
              onSubmit={(values) => update(job, values)}
              onCancel={() => setEditing(null)}
            />
          </li>
        ) : (
          <JobRow key={job.id} job={job} actions={actions} showChat={showChat} />
        ),
      )}
    </ul>
  );

  return (
    <>
      <PageHeader title={t('automations.title')} intro={t('automations.intro')} />
      {notice && <Notice kind={notice.kind}>{notice.text}</Notice>}
      <LoadedView loaded={list}>
        {() => (
          <>
            <Section
              title={t('automations.thisChat')}
              actions={
                chatId && !adding ? (
                  <button
                    type="button"
                    className="button button-primary"
                    onClick={() => {
                      setEditing(null);
                      setAdding(true);
                    }}
                  >
                    {t('automations.add')}
                  </button>
                ) : undefined
              }
            >
              {!chatId && <p className="muted">{t('automations.noChat')}</p>}
              {adding && <JobForm timezone={timezone} onSubmit={create} onCancel={() => setAdding(false)} />}
              {chatId && !mine.length && !adding && <p className="muted">{t('automations.noneHere')}</p>}
              {mine.length > 0 && rows(mine, false)}
            </Section>
            <Section title={t('automations.allChats')}>
              {others.length ? rows(others, true) : <p className="muted">{t('automations.noneElsewhere')}</p>}
            </Section>
          </>
        )}
      </LoadedView>
      <LoadedView loaded={heartbeat}>{(data) => <HeartbeatSection client={client} initial={data} />}</LoadedView>
      <ConfirmDialog
        open={deleting !== null}
        title={t('automations.deleteTitle', { name: deleting?.name ?? '' })}
        confirmLabel={t('automations.delete')}
        danger
        onConfirm={() => void confirmDelete()}
        onCancel={() => setDeleting(null)}
      >
        <p>{t('automations.deleteBody')}</p>
      </ConfirmDialog>
    </>
  );
}
