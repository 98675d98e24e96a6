import { type FormEvent, useState } from 'react';
import { useI18n } from '../i18n/react.js';
import { Icon } from './Icon.js';
import { LanguagePicker } from './LanguagePicker.js';

/** Asks for the token when the page was opened without one (or with a wrong one). */
export function TokenScreen({ problem, onToken }: { problem: string | null; onToken(token: string): void }) {
  const { t, tx } = useI18n();
  const [value, setValue] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (value.trim()) onToken(value.trim());
  };
  return (
    <main className="token-screen">
      <form onSubmit={submit} className="token-card">
        <h1>
          <Icon name="bot" className="brand-icon" /> nanobot
        </h1>
        <p>{tx('token.intro', { webui: <code>nanobot webui</code>, noOpen: <code>--no-open</code> })}</p>
        {problem && (
          <p className="note error" role="alert">
            {problem}
          </p>
        )}
        <label htmlFor="token-input">{t('token.label')}</label>
        <input
          id="token-input"
          type="password"
          autoComplete="off"
          value={value}
          onChange={(event) => setValue(event.target.value)}
        />
        <button type="submit" className="primary">
          {t('token.connect')}
        </button>
        <LanguagePicker className="token-language" />
      </form>
    </main>
  );
}
