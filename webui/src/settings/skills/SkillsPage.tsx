/**
 * Settings › Skills: the user's and the built-in skills (`GET /api/webui/skills`), whether each can run here (what
 * program or variable it misses, from its detail), a switch per skill (`skill.update`: agents.defaults.disabledSkills),
 * deleting one the user installed (`skill.delete`, after a confirm dialog), and installing one (InstallSkill).
 */
import { useEffect, useState } from 'react';
import type { SettingsClient } from '../client.js';
import { ConfirmDialog, LoadedView, Notice, PageHeader, Section, useLoad } from '../controls.js';
import type { SettingsPageProps } from '../pages.js';
import { usePageText } from '../text.js';
import { InstallSkill } from './InstallSkill.js';
import { skillsMessages } from './messages.js';
import type { SkillDetail, SkillRequirements, SkillSummary, SkillsPayload } from './types.js';
import './skills.css';

type Text = ReturnType<typeof usePageText<keyof (typeof skillsMessages)['en'] & string>>;

type Missing = SkillRequirements & { steps: NonNullable<SkillDetail['install_options']> };

/** What each unavailable skill misses, from its detail (loaded only for those: the list does not say). */
function useMissing(client: SettingsClient, skills: readonly SkillSummary[] | undefined) {
  const [missing, setMissing] = useState<Record<string, Missing>>({});
  const wanted = (skills ?? []).filter((skill) => !skill.available).map((skill) => skill.name);
  const key = wanted.join('\n');
  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` names the skills whose detail is needed.
  useEffect(() => {
    let live = true;
    void Promise.all(
      wanted.map((name) =>
        client
          .get<SkillDetail>(`webui/skills/${encodeURIComponent(name)}`)
          .then((detail) => [name, { ...detail.requirements, steps: detail.install_options ?? [] }] as const)
          .catch(() => undefined),
      ),
    ).then((found) => {
      if (live) setMissing(Object.fromEntries(found.filter((entry) => entry !== undefined)));
    });
    return () => {
      live = false;
    };
  }, [client, key]);
  return missing;
}

export function SkillsPage({ client }: SettingsPageProps) {
  const text = usePageText(skillsMessages);
  const { t } = text;
  const loaded = useLoad(() => client.get<SkillsPayload>('webui/skills'));
  const missing = useMissing(client, loaded.data?.skills);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);

  const change = async (name: string, run: () => Promise<unknown>, doneText: string) => {
    setBusy(name);
    setError(null);
    setDone(null);
    try {
      await run();
      await loaded.reload();
      setDone(doneText);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(null);
    }
  };
  const toggle = (skill: SkillSummary, enabled: boolean) =>
    change(
      skill.name,
      () => client.act('skill.update', { name: skill.name, enabled }),
      enabled ? t('skills.turnedOn', { name: skill.name }) : t('skills.turnedOff', { name: skill.name }),
    );
  const remove = (name: string) => {
    setDeleting(null);
    void change(name, () => client.act('skill.delete', { name }), t('skills.deleted', { name }));
  };

  return (
    <>
      <PageHeader title={t('skills.title')} intro={t('skills.intro')} />
      <InstallSkill
        client={client}
        onInstalled={async (name, available) => {
          await loaded.reload();
          setError(null);
          setDone(available ? t('skills.installed', { name }) : t('skills.installedNeeds', { name }));
        }}
      />
      {error && <Notice kind="error">{error}</Notice>}
      {done && <Notice kind="ok">{done}</Notice>}
      <LoadedView loaded={loaded}>
        {({ skills }) => {
          const mine = skills.filter((skill) => skill.source === 'workspace');
          const builtin = skills.filter((skill) => skill.source !== 'workspace');
          const rows = (list: SkillSummary[]) => (
            <ul className="skills-list">
              {list.map((skill) => (
                <SkillRow
                  key={skill.name}
                  skill={skill}
                  missing={missing[skill.name]}
                  busy={busy === skill.name}
                  text={text}
                  onToggle={(enabled) => void toggle(skill, enabled)}
                  onDelete={() => setDeleting(skill.name)}
                />
              ))}
            </ul>
          );
          return (
            <>
              <Section title={t('skills.mine')}>
                {mine.length > 0 ? rows(mine) : <p className="muted">{t('skills.noneMine')}</p>}
              </Section>
              <Section title={t('skills.builtin')}>{rows(builtin)}</Section>
            </>
          );
        }}
      </LoadedView>
      <ConfirmDialog
        open={deleting !== null}
        title={t('skills.deleteTitle', { name: deleting ?? '' })}
        confirmLabel={t('skills.delete')}
        danger
        onConfirm={() => deleting && remove(deleting)}
        onCancel={() => setDeleting(null)}
      >
        <p>{t('skills.deleteBody', { name: deleting ?? '' })}</p>
      </ConfirmDialog>
    </>
  );
}

function SkillRow({
  skill,
  missing,
  busy,
  text,
  onToggle,
  onDelete,
}: {
  skill: SkillSummary;
  missing: Missing | undefined;
  busy: boolean;
  text: Text;
  onToggle(enabled: boolean): void;
  onDelete(): void;
}) {
  const { t } = text;
  const enabled = skill.enabled !== false;
  const state = !enabled ? 'off' : skill.available ? 'ready' : 'needs';
  const stateText = {
    off: t('skills.stateOff'),
    ready: t('skills.stateReady'),
    needs: t('skills.stateNeeds'),
  }[state];
  return (
    <li className="skills-row" data-testid={`skill-${skill.name}`}>
      <div className="skills-row-main">
        <div className="skills-row-title">
          <strong>{skill.name}</strong>
          <span className={`skills-badge skills-badge-${state}`}>{stateText}</span>
        </div>
        <p className="skills-row-description">{skill.description}</p>
        {!skill.available && <MissingLine skill={skill} missing={missing} text={text} />}
      </div>
      <div className="skills-row-actions">
        <label className="toggle">
          <input
            type="checkbox"
            role="switch"
            aria-checked={enabled}
            checked={enabled}
            disabled={busy}
            onChange={(event) => onToggle(event.target.checked)}
          />
          <span className="toggle-track" aria-hidden="true" />
          <span className="sr-only">{t('skills.use', { name: skill.name })}</span>
        </label>
        {skill.deletable && (
          <button
            type="button"
            className="button button-danger"
            disabled={busy}
            aria-label={t('skills.deleteNamed', { name: skill.name })}
            onClick={onDelete}
          >
            {t('skills.delete')}
          </button>
        )}
      </div>
    </li>
  );
}

/** The programs and variables it misses (localised); the gateway's own words for anything else (a broken SKILL.md). */
function MissingLine({ skill, missing, text }: { skill: SkillSummary; missing: Missing | undefined; text: Text }) {
  const bins = missing?.missing_bins ?? [];
  const env = missing?.missing_env ?? [];
  if (bins.length === 0 && env.length === 0) {
    return <p className="skills-missing">{skill.unavailable_reason ?? ''}</p>;
  }
  const steps = missing?.steps ?? [];
  return (
    <>
      <p className="skills-missing">
        {bins.length > 0 && text.tx('skills.missingBins', { names: <code>{bins.join(', ')}</code> })}
        {bins.length > 0 && env.length > 0 && ' · '}
        {env.length > 0 && text.tx('skills.missingEnv', { names: <code>{env.join(', ')}</code> })}
      </p>
      {steps.length > 0 && (
        <p className="skills-missing">
          {text.tx('skills.suggests', {
            commands: steps.map((step, index) => (
              <span key={step.id}>
                {index > 0 && ', '}
                <code>{step.command}</code>
              </span>
            )),
          })}
        </p>
      )}
    </>
  );
}
