import { type FormEvent, useState } from 'react';
import { Icon } from './Icon.js';

/** Asks for the token when the page was opened without one (or with a wrong one). */
export function TokenScreen({ problem, onToken }: { problem: string | null; onToken(token: string): void }) {
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
        <p>
          Open this page with <code>nanobot webui</code>, or paste the token it prints with <code>--no-open</code>.
        </p>
        {problem && (
          <p className="note error" role="alert">
            {problem}
          </p>
        )}
        <label htmlFor="token-input">Token</label>
        <input
          id="token-input"
          type="password"
          autoComplete="off"
          value={value}
          onChange={(event) => setValue(event.target.value)}
        />
        <button type="submit" className="primary">
          Connect
        </button>
      </form>
    </main>
  );
}
