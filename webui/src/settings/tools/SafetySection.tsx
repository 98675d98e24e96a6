/**
 * Tool safety: the shell sandbox, the workspace restriction and the SSRF whitelist (`settings.tool_safety.update`).
 * A change that lets tools do more is asked about first; the gateway refuses it without that confirmation anyway.
 */
import { useState } from 'react';
import type { SettingsClient } from '../client.js';
import { BusyButton, ConfirmDialog, Notice, Section, Toggle } from '../controls.js';
import { usePageText } from '../text.js';
import { LinesField, linesOf, SelectField } from './fields.js';
import { toolsMessages } from './messages.js';
import { SANDBOX_MODES, type SandboxMode, type ToolSettings } from './types.js';

const STRENGTH: Record<SandboxMode, number> = { none: 0, auto: 1, bwrap: 2 };
const modeOf = (written: string | null): SandboxMode =>
  written === 'bwrap' || written === 'none' ? written : written === '' ? 'none' : 'auto';

export function SafetySection({
  client,
  settings,
  onSaved,
}: {
  client: SettingsClient;
  settings: ToolSettings;
  onSaved(next: ToolSettings): void;
}) {
  const { t } = usePageText(toolsMessages);
  const saved = settings.advanced;
  const savedMode = modeOf(saved.exec_sandbox);
  const savedList = saved.ssrf_whitelist ?? [];
  const [mode, setMode] = useState<SandboxMode>(savedMode);
  const [restrict, setRestrict] = useState(saved.restrict_to_workspace);
  const [whitelist, setWhitelist] = useState(savedList.join('\n'));
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const [asking, setAsking] = useState<string[] | null>(null);
  const labels: Record<SandboxMode, string> = {
    auto: t('tools.safety.modeAuto'),
    bwrap: t('tools.safety.modeBwrap'),
    none: t('tools.safety.modeNone'),
  };
  const explained: Record<SandboxMode, string> = {
    auto: t('tools.safety.sandboxAuto'),
    bwrap: t('tools.safety.sandboxBwrap'),
    none: t('tools.safety.sandboxNone'),
  };

  const weaker = (): string[] => {
    const reasons: string[] = [];
    if (saved.restrict_to_workspace && !restrict) reasons.push(t('tools.safety.weakerRestrict'));
    if (STRENGTH[mode] < STRENGTH[savedMode]) reasons.push(t('tools.safety.weakerSandbox', { mode: labels[mode] }));
    const added = linesOf(whitelist).filter((entry) => !savedList.includes(entry));
    if (added.length > 0) reasons.push(t('tools.safety.weakerWhitelist', { entries: added.join(', ') }));
    return reasons;
  };

  const write = async (confirmed: boolean) => {
    const next = await client.act<ToolSettings>('settings.tool_safety.update', {
      exec_sandbox: mode,
      restrict_to_workspace: restrict,
      ssrf_whitelist: linesOf(whitelist),
      ...(confirmed ? { confirm_weaker: true } : {}),
    });
    setWhitelist((next.advanced.ssrf_whitelist ?? []).join('\n'));
    setStatus({ ok: true, text: t('tools.saved') });
    onSaved(next);
  };

  const save = async () => {
    setStatus(null);
    const reasons = weaker();
    if (reasons.length > 0) setAsking(reasons);
    else await write(false);
  };

  const fail = (text: string) => setStatus({ ok: false, text });

  return (
    <Section title={t('tools.safety.title')}>
      <SelectField
        label={t('tools.safety.sandbox')}
        value={mode}
        options={SANDBOX_MODES.map((value) => ({ value, label: labels[value] }))}
        onChange={(value) => setMode(modeOf(value))}
        help={explained[mode]}
      />
      <Toggle
        label={t('tools.safety.restrict')}
        checked={restrict}
        onChange={setRestrict}
        help={t('tools.safety.restrictHelp', { path: settings.runtime.workspace_path })}
      />
      <LinesField
        label={t('tools.safety.whitelist')}
        value={whitelist}
        onChange={setWhitelist}
        help={t('tools.safety.whitelistHelp')}
      />
      {status && <Notice kind={status.ok ? 'ok' : 'error'}>{status.text}</Notice>}
      <BusyButton kind="primary" onClick={save} onError={fail}>
        {t('tools.safety.save')}
      </BusyButton>
      <ConfirmDialog
        open={asking !== null}
        title={t('tools.safety.confirmTitle')}
        confirmLabel={t('tools.safety.confirm')}
        danger
        onCancel={() => setAsking(null)}
        onConfirm={() => {
          setAsking(null);
          write(true).catch((error: Error) => fail(error.message));
        }}
      >
        <p>{t('tools.safety.confirmIntro')}</p>
        <ul className="tools-confirm-list">
          {(asking ?? []).map((reason) => (
            <li key={reason}>{reason}</li>
          ))}
        </ul>
      </ConfirmDialog>
    </Section>
  );
}
