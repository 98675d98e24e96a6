import { useCallback, useEffect, useState } from 'react';
import { Api, ApiError, forgetToken, saveToken, takeToken } from './api.js';
import { TokenScreen } from './components/TokenScreen.js';
import { Workspace } from './Workspace.js';

type Theme = 'light' | 'dark';

function initialTheme(): Theme {
  const saved = localStorage.getItem('nanobot.theme');
  if (saved === 'light' || saved === 'dark') return saved;
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

/** Checks the token, then shows the chat (or asks for a token). */
export function App() {
  const [api, setApi] = useState<Api | null>(null);
  const [wsPath, setWsPath] = useState('/');
  const [problem, setProblem] = useState<string | null>(null);
  const [checking, setChecking] = useState(true);
  const [theme, setTheme] = useState<Theme>(initialTheme);

  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem('nanobot.theme', theme);
  }, [theme]);

  // An empty token works when the gateway needs none (websocketRequiresToken: false, loopback only).
  const tryToken = useCallback(async (token: string) => {
    const candidate = new Api(token);
    try {
      const info = await candidate.info();
      if (token) saveToken(token);
      setWsPath(info.ws_path);
      setApi(candidate);
      setProblem(null);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        forgetToken();
        setProblem(token ? 'That token was not accepted.' : null);
      } else {
        setProblem(`Cannot reach the gateway: ${(err as Error).message}`);
      }
    } finally {
      setChecking(false);
    }
  }, []);

  useEffect(() => {
    void tryToken(takeToken() ?? '');
  }, [tryToken]);

  if (checking) return <div className="splash" aria-busy="true" />;
  if (!api) return <TokenScreen problem={problem} onToken={(token) => void tryToken(token)} />;
  return (
    <Workspace
      api={api}
      wsPath={wsPath}
      theme={theme}
      onToggleTheme={() => setTheme(theme === 'dark' ? 'light' : 'dark')}
    />
  );
}
