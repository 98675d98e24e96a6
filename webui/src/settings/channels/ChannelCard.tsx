/**
 * One channel of the catalog: its name, its live state in the gateway, the switch that turns it on or off, and its
 * setup form (the fields of its setup description). "Check" asks the gateway to validate the form without saving
 * (`settings.channel.validate`: required fields, the channel's own settings check, a call to its platform); "Save"
 * checks first and saves only a form without failures (`settings.channel.configure`), turning the channel on when
 * asked; the gateway then starts it without a restart. A channel with a QR login also offers Connect (QrConnect).
 */
import { useEffect, useId, useMemo, useState } from 'react';
import type { SettingsClient } from '../client.js';
import { BusyButton, Notice, Toggle } from '../controls.js';
import { usePageText } from '../text.js';
import { ChannelField } from './fields.js';
import { type ChannelsText, channelsMessages } from './messages.js';
import { QrConnect } from './QrConnect.js';
import {
  type ChannelFeature,
  type FeaturesPayload,
  hasQrConnect,
  isAlwaysOn,
  type SetupField,
  type ValidationPayload,
} from './types.js';

/** The form's starting values: what is saved (secrets never are), else the schema's default. */
function savedValues(feature: ChannelFeature): Record<string, string> {
  const values: Record<string, string> = {};
  for (const field of feature.setup?.fields ?? []) {
    if (field.kind === 'secret') values[field.key] = '';
    else
      values[field.key] =
        feature.config_values?.[field.key] ?? field.default_value ?? (field.kind === 'bool' ? 'false' : '');
  }
  return values;
}

export function statusOf(
  feature: ChannelFeature,
  t: ChannelsText,
): { text: string; tone: 'ok' | 'bad' | 'busy' | 'idle' } {
  switch (feature.runtime_status) {
    case 'running':
      return { text: t('channels.status.running'), tone: 'ok' };
    case 'starting':
      return { text: t('channels.status.starting'), tone: 'busy' };
    case 'failed':
      return { text: t('channels.status.failed'), tone: 'bad' };
  }
  if (!feature.installed) return { text: t('channels.status.notInstalled'), tone: 'idle' };
  return feature.configured
    ? { text: t('channels.status.off'), tone: 'idle' }
    : { text: t('channels.status.notSetUp'), tone: 'idle' };
}

interface Outcome {
  kind: 'error' | 'ok' | 'info';
  text: string;
}

export function ChannelCard({
  feature,
  client,
  onChanged,
}: {
  feature: ChannelFeature;
  client: SettingsClient;
  /** The catalog changed (saved, switched): load it again. */
  onChanged(): Promise<void>;
}) {
  const { t, tx, locale } = usePageText(channelsMessages);
  const serverLang = locale === 'en' ? undefined : 'en';
  const headingId = useId();
  const formId = useId();
  const fields: SetupField[] = feature.setup?.fields ?? [];
  const saved = useMemo(() => savedValues(feature), [feature]);
  const [open, setOpen] = useState(false);
  const [values, setValues] = useState(saved);
  const [dirty, setDirty] = useState<ReadonlySet<string>>(new Set());
  const [checked, setChecked] = useState<ValidationPayload | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [switching, setSwitching] = useState(false);
  const [valueError, setValueError] = useState<{ field: string; message: string } | null>(null);
  // What another tab or the CLI saved shows up here, unless this form holds the user's unsaved edits.
  useEffect(() => {
    if (dirty.size === 0) setValues(saved);
  }, [saved, dirty]);

  const alwaysOn = isAlwaysOn(feature);
  // Alternatives of which one must be complete (Matrix: a password, or an access token), by their labels.
  const labelOf = (name: string) => fields.find((field) => field.field === name)?.label ?? name;
  const oneOf = feature.setup?.one_of?.map((keys) => keys.map(labelOf).join(' + ')).join(' / ');
  const status = statusOf(feature, t);
  const changed = () => Object.fromEntries([...dirty].map((key) => [key, values[key] ?? '']));
  const errors = {
    ...fieldErrors(checked, fields, t('channels.missing')),
    ...(valueError ? { [valueError.field]: valueError.message } : {}),
  };

  const setValue = (key: string, value: string) => {
    setValues((current) => ({ ...current, [key]: value }));
    setDirty((current) => new Set(current).add(key));
  };

  const check = async (): Promise<ValidationPayload> => {
    setValueError(null);
    const result = await client.act<ValidationPayload>('settings.channel.validate', {
      name: feature.name,
      values: changed(),
    });
    setChecked(result);
    return result;
  };

  const blocked = (result: ValidationPayload) =>
    result.status === 'needs_setup' || result.checks.some((entry) => entry.status === 'fail');

  const save = async (enable: boolean) => {
    setOutcome(null);
    const result = await check();
    if (blocked(result)) {
      setOutcome({ kind: 'error', text: t('channels.fixFirst') });
      return;
    }
    const answer = await client.act<{ nanobot_features: FeaturesPayload }>('settings.channel.configure', {
      name: feature.name,
      values: changed(),
      ...(enable ? { enable: true } : {}),
    });
    const restart = answer.nanobot_features.requires_restart === true;
    setOutcome({
      kind: 'ok',
      text: restart
        ? t('channels.savedRestart')
        : enable || feature.enabled
          ? t('channels.savedStarting', { name: feature.display_name })
          : t('channels.saved'),
    });
    // The saved catalog first, then the form lets go of its edits and shows it (secrets empty again).
    await onChanged();
    setDirty(new Set());
  };

  const toggle = async (on: boolean) => {
    setSwitching(true);
    setOutcome(null);
    try {
      await client.act<FeaturesPayload>(on ? 'settings.feature.enable' : 'settings.feature.disable', {
        name: feature.name,
      });
      setOutcome({
        kind: 'ok',
        text: on
          ? t('channels.turnedOn', { name: feature.display_name })
          : t('channels.turnedOff', { name: feature.display_name }),
      });
      await onChanged();
    } catch (err) {
      setOutcome({ kind: 'error', text: (err as Error).message });
      // Turning on failed for want of setup: the form is where that is fixed.
      if (on && fields.length > 0) setOpen(true);
    } finally {
      setSwitching(false);
    }
  };

  // The channel's name for screen readers, beside a button's short visible text.
  const hiddenName = <span className="sr-only"> {feature.display_name} </span>;
  // A value the gateway refused names its key (`'channels.email.imapPort' must be a whole number`): shown there.
  const fail = (message: string) => {
    const field = fields.find((candidate) => message.startsWith(`'${candidate.key}'`));
    if (field) {
      setChecked(null);
      setValueError({ field: field.field, message });
    } else setOutcome({ kind: 'error', text: message });
  };

  return (
    <article className="channels-card" aria-labelledby={headingId} data-channel={feature.name}>
      <div className="channels-card-head">
        <h4 id={headingId}>{feature.display_name}</h4>
        <span
          className={`channels-status channels-status-${status.tone}`}
          // A channel that starts or fails while the page is open is told, not only drawn.
          aria-live="polite"
          data-testid={`channel-status-${feature.name}`}
        >
          {status.text}
        </span>
      </div>
      {feature.runtime_status === 'failed' && feature.runtime_error && (
        <p className="channels-runtime-error" lang={serverLang}>
          {feature.runtime_error}
        </p>
      )}
      {!feature.installed && (
        <p className="field-help">
          {tx('channels.notInstalled', { command: <code>nanobot channels install {feature.name}</code> })}
        </p>
      )}
      <div className="channels-card-actions">
        <Toggle
          label={t('channels.switch', { name: feature.display_name })}
          checked={feature.enabled}
          disabled={alwaysOn || switching}
          help={alwaysOn ? t('channels.servesWebui') : undefined}
          onChange={(on) => void toggle(on)}
        />
        {fields.length > 0 && (
          <button
            type="button"
            className="button button-secondary"
            aria-expanded={open}
            aria-controls={formId}
            onClick={() => setOpen(!open)}
          >
            {open
              ? tx('channels.hideForm', { name: hiddenName })
              : feature.configured
                ? tx('channels.edit', { name: hiddenName })
                : tx('channels.setUp', { name: hiddenName })}
          </button>
        )}
      </div>
      {hasQrConnect(feature) && <QrConnect feature={feature} client={client} onChanged={onChanged} />}
      {outcome && !open && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
      {fields.length > 0 && (
        <div id={formId} className="channels-form" hidden={!open}>
          {feature.setup?.official_url && (
            <p className="field-help">
              {tx('channels.officialUrl', {
                link: (
                  <a href={feature.setup.official_url} target="_blank" rel="noreferrer noopener">
                    {feature.setup.official_url}
                  </a>
                ),
              })}
            </p>
          )}
          {oneOf && (
            <p className="field-help">{tx('channels.oneOf', { choices: <span lang={serverLang}>{oneOf}</span> })}</p>
          )}
          {fields.map((field) => (
            <ChannelField
              key={field.key}
              field={field}
              value={values[field.key] ?? ''}
              onChange={(value) => setValue(field.key, value)}
              error={errors[field.field]}
              savedSecret={feature.configured_fields?.includes(field.key) === true}
              serverLang={serverLang}
            />
          ))}
          {checked && <CheckResults result={checked} serverLang={serverLang} />}
          {outcome && open && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
          <div className="channels-form-actions">
            {feature.enabled || alwaysOn ? (
              <BusyButton kind="primary" onClick={() => save(false)} onError={fail}>
                {t('channels.save')}
              </BusyButton>
            ) : (
              <>
                <BusyButton kind="primary" onClick={() => save(true)} onError={fail}>
                  {t('channels.saveAndEnable')}
                </BusyButton>
                <BusyButton onClick={() => save(false)} onError={fail}>
                  {t('channels.saveOnly')}
                </BusyButton>
              </>
            )}
            <BusyButton
              onClick={async () => {
                setOutcome(null);
                await check();
              }}
              onError={fail}
            >
              {t('channels.check')}
            </BusyButton>
          </div>
        </div>
      )}
    </article>
  );
}

/** Errors under the fields they are about: a required field left empty, by its bare name. */
function fieldErrors(
  result: ValidationPayload | null,
  fields: readonly SetupField[],
  missing: string,
): Record<string, string> {
  const errors: Record<string, string> = {};
  if (!result) return errors;
  for (const entry of result.checks) {
    if (entry.status !== 'fail' || !entry.id.startsWith('field:')) continue;
    errors[entry.id.slice('field:'.length)] = entry.message ?? missing;
  }
  for (const name of result.missing_fields) {
    if (!errors[name] && fields.some((field) => field.field === name)) errors[name] = missing;
  }
  return errors;
}

/** What the gateway checked, each with its outcome; failures announced at once. */
function CheckResults({ result, serverLang }: { result: ValidationPayload; serverLang: string | undefined }) {
  const { t } = usePageText(channelsMessages);
  const failed = result.status === 'needs_setup' || result.checks.some((entry) => entry.status === 'fail');
  const word: Record<string, string> = {
    pass: t('channels.check.pass'),
    fail: t('channels.check.fail'),
    warn: t('channels.check.warn'),
    skipped: t('channels.check.skipped'),
  };
  const who = result.identity?.name ?? result.identity?.account;
  return (
    <div
      className={`notice ${failed ? 'notice-error' : result.status === 'connected' ? 'notice-ok' : 'notice-info'} channels-checks`}
      role={failed ? 'alert' : 'status'}
      data-testid="channel-checks"
    >
      <p className="channels-checks-title">{failed ? t('channels.checkFailed') : t('channels.checkPassed')}</p>
      <ul>
        {result.checks.map((entry) => (
          <li key={entry.id} className={`channels-check channels-check-${entry.status}`}>
            <span className="channels-check-word">{word[entry.status] ?? entry.status}</span>{' '}
            <span lang={serverLang}>
              {entry.label}
              {entry.message ? `: ${entry.message}` : ''}
            </span>
          </li>
        ))}
      </ul>
      {who && <p>{t('channels.identity', { name: who })}</p>}
    </div>
  );
}
