import { useId } from 'react';
import { isLocale, LOCALES } from '../i18n/core.js';
import { useI18n } from '../i18n/react.js';

/** The language switcher: each language under its own name; the choice is remembered in this browser. */
export function LanguagePicker({ className }: { className?: string }) {
  const { t, locale, setLocale } = useI18n();
  const id = useId();
  return (
    <div className={`language-picker ${className ?? ''}`}>
      <label htmlFor={id}>{t('language.label')}</label>
      <select
        id={id}
        value={locale}
        onChange={(event) => {
          if (isLocale(event.target.value)) void setLocale(event.target.value);
        }}
      >
        {LOCALES.map((option) => (
          <option key={option.code} value={option.code} lang={option.code}>
            {option.name}
          </option>
        ))}
      </select>
    </div>
  );
}
