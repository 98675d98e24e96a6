import { useCallback, useEffect, useState } from 'react';
import { Api, ApiError, type Bootstrap, fetchBootstrap, forgetToken, saveToken, socketUrl, takeToken } from './api.js';
import { TokenScreen } from './components/TokenScreen.js';
import { useI18n } from './i18n/react.js';
import { Workspace } from './Workspace.js';

type Theme = 'light' | 'dark';

function initialTheme(): Theme {
  const saved = localStorage.getItem('nanobot.theme');
  if (saved === 'light' || saved === 'dark') return saved;
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

/** Bootstraps (with the token, when there is one), then shows the chat (or asks for a token). */
export function App() {
  const { t } = useI18n();
  const [api, setApi] = useState<Api | null>(null);
  const [secret, setSecret] = useState('');
  const [expiresIn, setExpiresIn] = useState(0);
  // Kept as what went wrong (not as words), so it follows a change of language.
  const [problem, setProblem] = useState<{ kind: 'rejected' } | { kind: 'unreachable'; error: string } | null>(null);
  const [checking, setChecking] = useState(true);
  const [theme, setTheme] = useState<Theme>(initialTheme);

  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem('nanobot.theme', theme);
  }, [theme]);

  // No token is needed by a browser on the gateway's machine, unless the gateway is configured with one.
  const tryToken = useCallback(async (token: string) => {
    try {
      const boot = await fetchBootstrap(token);
      if (token) saveToken(token);
      setSecret(token);
      setExpiresIn(boot.expires_in ?? 0);
      setApi(new Api(boot.api_token ?? token));
      setProblem(null);
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
        forgetToken();
        setProblem(token ? { kind: 'rejected' } : null);
      } else {
        setProblem({ kind: 'unreachable', error: (err as Error).message });
      }
    } finally {
      setChecking(false);
    }
  }, []);

  useEffect(() => {
    void tryToken(takeToken() ?? '');
  }, [tryToken]);

  /** A fresh bootstrap: renews the API token, and gives the one-time token a new connection needs. */
  const rebootstrap = useCallback(async (): Promise<Bootstrap> => {
    const boot = await fetchBootstrap(secret);
    if (api && boot.api_token) api.token = boot.api_token;
    return boot;
  }, [api, secret]);
  const connectUrl = useCallback(async () => socketUrl(await rebootstrap()), [rebootstrap]);

  // Renew the API token before it expires (nanobot's tokens last expires_in seconds).
  useEffect(() => {
    if (!api || expiresIn <= 0) return;
    const timer = setInterval(() => void rebootstrap().catch(() => undefined), expiresIn * 800);
    return () => clearInterval(timer);
  }, [api, expiresIn, rebootstrap]);

  const problemText =
    problem?.kind === 'rejected'
      ? t('app.tokenRejected')
      : problem?.kind === 'unreachable'
        ? t('app.unreachable', { error: problem.error })
        : null;

  if (checking) return <div className="splash" aria-busy="true" />;
  if (!api) return <TokenScreen problem={problemText} onToken={(token) => void tryToken(token)} />;
  return (
    <Workspace
      api={api}
      connectUrl={connectUrl}
      theme={theme}
      onToggleTheme={() => setTheme(theme === 'dark' ? 'light' : 'dark')}
    />
  );
}
