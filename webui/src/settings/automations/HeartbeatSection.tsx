/**
 * The heartbeat: on or off, how often, how many of its own messages it keeps (gateway.heartbeat in config.json,
 * read by the gateway when it starts), and HEARTBEAT.md, whose "Active Tasks" it works on.
 */
import { useId, useState } from 'react';
import type { SettingsClient } from '../client.js';
import { BusyButton, Notice, Section, TextField, Toggle } from '../controls.js';
import { usePageText } from '../text.js';
import { automationsMessages } from './messages.js';
import type { HeartbeatPayload } from './model.js';

export function HeartbeatSection({ client, initial }: { client: SettingsClient; initial: HeartbeatPayload }) {
  const { t, tx, number } = usePageText(automationsMessages);
  const id = useId();
  const [enabled, setEnabled] = useState(initial.heartbeat.enabled);
  const [minutes, setMinutes] = useState(String(Math.round(initial.heartbeat.interval_s / 60)));
  const [keep, setKeep] = useState(String(initial.heartbeat.keep_recent_messages));
  const [content, setContent] = useState(initial.file.content);
  const [problem, setProblem] = useState(initial.file.problem);
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string; restart?: boolean } | null>(null);
  const fail = (text: string) => setNotice({ kind: 'error', text });

  const saveSettings = async () => {
    const interval = Number(minutes);
    const recent = Number(keep);
    if (!Number.isInteger(interval) || interval < 1 || interval > 10_080) return fail(t('automations.hb.badInterval'));
    if (!Number.isInteger(recent) || recent < 0 || recent > 1000) return fail(t('automations.hb.badKeep'));
    const saved = await client.act<HeartbeatPayload>('automation.heartbeat.update', {
      enabled,
      interval_s: interval * 60,
      keep_recent_messages: recent,
    });
    setNotice({ kind: 'ok', text: t('automations.hb.saved'), restart: saved.requires_restart });
  };

  const saveFile = async () => {
    const saved = await client.act<HeartbeatPayload>('automation.heartbeat_file.update', { content });
    setProblem(saved.file.problem);
    setNotice({ kind: 'ok', text: t('automations.hb.fileSaved') });
  };

  return (
    <Section title={t('automations.hb.title')}>
      <p className="muted">{t('automations.hb.intro')}</p>
      <Toggle label={t('automations.hb.enabled')} checked={enabled} onChange={setEnabled} />
      <div className="automations-row">
        <TextField label={t('automations.hb.interval')} type="number" value={minutes} onChange={setMinutes} />
        <TextField
          label={t('automations.hb.keep')}
          type="number"
          value={keep}
          onChange={setKeep}
          help={t('automations.hb.keepHelp')}
        />
      </div>
      <div className="automations-form-actions">
        <BusyButton kind="primary" onClick={saveSettings} onError={fail}>
          {t('automations.hb.save')}
        </BusyButton>
      </div>
      {problem && <Notice kind="error">{problem}</Notice>}
      <div className="field">
        <label htmlFor={`${id}-file`}>{t('automations.hb.file')}</label>
        <textarea
          id={`${id}-file`}
          className="automations-file"
          rows={10}
          value={content}
          spellCheck={false}
          aria-describedby={`${id}-file-help`}
          onChange={(event) => setContent(event.target.value)}
        />
        <p id={`${id}-file-help`} className="field-help">
          {tx('automations.hb.fileHelp', {
            section: <code>## Active Tasks</code>,
            size: number(Math.round(initial.file.max_bytes / 1024)),
          })}
        </p>
      </div>
      <div className="automations-form-actions">
        <BusyButton onClick={saveFile} onError={fail}>
          {t('automations.hb.saveFile')}
        </BusyButton>
      </div>
      {notice && (
        <Notice kind={notice.kind}>
          {notice.text}
          {notice.restart && <> {tx('automations.hb.restart', { command: <code>nanobot gateway restart</code> })}</>}
        </Notice>
      )}
    </Section>
  );
}
