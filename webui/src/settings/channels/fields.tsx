/**
 * One field of a channel's setup description as a form control: its label and help are the gateway's (English
 * text, marked as such for screen readers in another language), its kind picks the control. A secret starts empty
 * and an empty one keeps the saved value (the gateway never sends it back), as the shared SecretField does.
 */
import { useId } from 'react';
import { usePageText } from '../text.js';
import { channelsMessages } from './messages.js';
import type { SetupField } from './types.js';

export interface ChannelFieldProps {
  field: SetupField;
  value: string;
  onChange(value: string): void;
  error?: string | undefined;
  /** A secret that is saved (shown only as "saved"). */
  savedSecret: boolean;
  /** `en` when the gateway's English text sits in a page of another language. */
  serverLang: string | undefined;
}

export function ChannelField({ field, value, onChange, error, savedSecret, serverLang }: ChannelFieldProps) {
  const { t } = usePageText(channelsMessages);
  const id = useId();
  const keep = field.kind === 'secret' && savedSecret ? t('channels.secretSaved') : '';
  const described = [field.help || keep ? `${id}-help` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  const label = (
    <>
      <span lang={serverLang}>{field.label || field.field}</span>
      {field.required && <span className="channels-required"> ({t('channels.required')})</span>}
    </>
  );
  const help = (field.help || keep) && (
    <p id={`${id}-help`} className="field-help">
      {field.help && <span lang={serverLang}>{field.help}</span>}
      {field.help && keep && ' '}
      {keep}
    </p>
  );
  const errorLine = error && (
    <p id={`${id}-error`} className="field-error" role="alert">
      <span lang={serverLang}>{error}</span>
    </p>
  );
  const common = {
    id,
    name: field.key,
    'aria-invalid': error ? true : undefined,
    'aria-describedby': described || undefined,
  } as const;

  if (field.kind === 'bool') {
    const checked = value === 'true';
    return (
      <div className={`toggle-row channels-field${error ? ' has-error' : ''}`}>
        <label className="toggle" htmlFor={id}>
          <input
            {...common}
            type="checkbox"
            role="switch"
            checked={checked}
            aria-checked={checked}
            onChange={(event) => onChange(event.target.checked ? 'true' : 'false')}
          />
          <span className="toggle-track" aria-hidden="true" />
          <span>{label}</span>
        </label>
        {help}
        {errorLine}
      </div>
    );
  }
  return (
    <div className={`field channels-field${error ? ' has-error' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {field.kind === 'enum' ? (
        <select {...common} value={value} onChange={(event) => onChange(event.target.value)}>
          {!field.default_value && <option value="">—</option>}
          {field.choices.map((choice) => (
            <option key={choice} value={choice}>
              {choice}
            </option>
          ))}
        </select>
      ) : (
        <input
          {...common}
          type={field.kind === 'secret' ? 'password' : 'text'}
          inputMode={field.kind === 'int' ? 'numeric' : undefined}
          autoComplete={field.kind === 'secret' ? 'new-password' : 'off'}
          spellCheck={false}
          value={value}
          placeholder={field.kind === 'secret' ? undefined : field.default_value}
          required={field.required && !(field.kind === 'secret' && savedSecret)}
          onChange={(event) => onChange(event.target.value)}
        />
      )}
      {help}
      {errorLine}
    </div>
  );
}
