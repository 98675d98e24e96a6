/**
 * Installing a skill in two steps: "Check" (`skill.preview`: the gateway fetches and checks the source as
 * `nanobot skills install` does, writing nothing) shows its files, what it needs and every command it asks the user to
 * run (none is run); "Install" (`skill.install` with the preview's digest) installs exactly what was shown.
 */
import { useEffect, useRef, useState } from 'react';
import type { SettingsClient } from '../client.js';
import { BusyButton, Notice, Section, TextField } from '../controls.js';
import { usePageText } from '../text.js';
import { skillsMessages } from './messages.js';
import type { SkillInstallResult, SkillPreview, SuggestedCommand } from './types.js';

export function InstallSkill({
  client,
  onInstalled,
}: {
  client: SettingsClient;
  /** `available`: whether it can run here as installed (else it waits for a program or variable). */
  onInstalled(name: string, available: boolean): Promise<void>;
}) {
  const { t, tx, number } = usePageText(skillsMessages);
  const [source, setSource] = useState('');
  const [preview, setPreview] = useState<SkillPreview | null>(null);
  const [replace, setReplace] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const form = useRef<HTMLFormElement>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  // A new preview is read out from its name; once it goes (installed, cancelled), the reader is back at the source.
  const shown = preview !== null;
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    if (shown) heading.current?.focus();
    else form.current?.querySelector('input')?.focus();
  }, [shown]);

  const check = async () => {
    setError(null);
    setPreview(null);
    const given = source.trim();
    if (!given) {
      setError(t('skills.sourceMissing'));
      return;
    }
    try {
      setPreview((await client.act<{ preview: SkillPreview }>('skill.preview', { source: given })).preview);
      setReplace(false);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const install = async (checked: SkillPreview) => {
    setError(null);
    try {
      const result = await client.act<SkillInstallResult>('skill.install', {
        source: source.trim(),
        digest: checked.digest,
        force: replace,
      });
      if (!result.last_action.installed) {
        setError(t('skills.alreadyInstalled', { name: checked.name }));
        return;
      }
      setPreview(null);
      setSource('');
      const row = result.skills.find((skill) => skill.name === result.last_action.name);
      await onInstalled(result.last_action.name, row?.available ?? false);
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <Section title={t('skills.installTitle')}>
      <form
        ref={form}
        className="skills-install-form"
        onSubmit={(event) => {
          event.preventDefault();
          void check();
        }}
      >
        <TextField
          label={t('skills.source')}
          value={source}
          onChange={(value) => {
            setSource(value);
            // The preview belongs to the source it was made from.
            setPreview(null);
          }}
          help={t('skills.sourceHelp')}
          placeholder={t('skills.sourcePlaceholder')}
          name="skill-source"
        />
        <BusyButton kind={preview ? 'secondary' : 'primary'} onClick={check}>
          {t('skills.check')}
        </BusyButton>
      </form>
      {error && <Notice kind="error">{error}</Notice>}
      {preview && (
        <div className="skills-preview" data-testid="skill-preview">
          <h4 ref={heading} tabIndex={-1}>
            {preview.name}
          </h4>
          <p className="skills-row-description">{preview.description}</p>
          <dl className="skills-facts">
            <dt>{t('skills.files')}</dt>
            <dd>
              {t('skills.fileCount', {
                count: preview.files.length,
                size: number(preview.files.reduce((sum, file) => sum + file.bytes, 0)),
              })}
              <ul className="skills-files">
                {preview.files.map((file) => (
                  <li key={file.path}>
                    <code>{file.path}</code>
                  </li>
                ))}
              </ul>
            </dd>
            <dt>{t('skills.needs')}</dt>
            <dd>
              {preview.requirements.bins.length + preview.requirements.env.length === 0
                ? t('skills.needsNothing')
                : [...preview.requirements.bins, ...preview.requirements.env].map((name) => {
                    const lacking =
                      preview.requirements.missing_bins.includes(name) ||
                      preview.requirements.missing_env.includes(name);
                    return (
                      <span key={name} className={`skills-need${lacking ? ' is-missing' : ''}`}>
                        <code>{name}</code>
                        {lacking && ` (${t('skills.notHere')})`}
                      </span>
                    );
                  })}
            </dd>
          </dl>
          <h5 id="skills-commands-heading">{t('skills.commandsTitle')}</h5>
          {preview.commands.length === 0 ? (
            <p className="muted">{t('skills.noCommands')}</p>
          ) : (
            <>
              <p className="skills-commands-note">{t('skills.commandsNote')}</p>
              <ul className="skills-commands" aria-labelledby="skills-commands-heading">
                {preview.commands.map((entry) => (
                  <CommandRow key={entry.command} entry={entry} />
                ))}
              </ul>
            </>
          )}
          {preview.replaces_builtin && <Notice kind="info">{t('skills.hidesBuiltin', { name: preview.name })}</Notice>}
          {preview.already_installed && (
            <label className="skills-replace">
              <input type="checkbox" checked={replace} onChange={(event) => setReplace(event.target.checked)} />
              {tx('skills.replace', { name: <strong>{preview.name}</strong> })}
            </label>
          )}
          <div className="skills-preview-actions">
            <button type="button" className="button button-secondary" onClick={() => setPreview(null)}>
              {t('skills.cancel')}
            </button>
            <BusyButton
              kind="primary"
              disabled={preview.already_installed && !replace}
              onClick={() => install(preview)}
            >
              {t('skills.install', { name: preview.name })}
            </BusyButton>
          </div>
        </div>
      )}
    </Section>
  );
}

function CommandRow({ entry }: { entry: SuggestedCommand }) {
  const { t } = usePageText(skillsMessages);
  const warning = entry.warning ? warningText(t, entry.warning) : null;
  return (
    <li className={warning ? 'has-warning' : undefined}>
      <code>{entry.command}</code>
      <span className="skills-command-origin">
        {entry.from === 'metadata' ? t('skills.fromMetadata') : t('skills.fromSkillFile')}
      </span>
      {warning && <span className="skills-command-warning">⚠ {warning}</span>}
    </li>
  );
}

/** The gateway's risk notes (src/skills/install-commands.ts) in the reader's language; an unknown one as a plain flag. */
function warningText(
  t: ReturnType<typeof usePageText<keyof (typeof skillsMessages)['en'] & string>>['t'],
  warning: string,
) {
  switch (warning) {
    case 'pipes a download into a shell':
      return t('skills.riskDownloadShell');
    case 'decodes hidden content':
      return t('skills.riskDecodes');
    case 'pipes text into an interpreter':
      return t('skills.riskInterpreter');
    case 'evaluates generated code':
      return t('skills.riskEval');
    case 'runs as root':
      return t('skills.riskRoot');
    case 'loosens permissions':
      return t('skills.riskPermissions');
    default:
      return t('skills.riskOther');
  }
}
