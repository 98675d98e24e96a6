/** The token (from the URL fragment `#token=…`, kept in this browser) and the REST calls, which carry it. */
import type {
  SessionListRow,
  SidebarStateView,
  StatusReport,
  ThreadResponse,
  UploadResult,
} from '../../src/channels/websocket/frames.js';

/** The session key of one of our chats (nanobot's routes take keys, not chat ids). */
export const sessionKeyOf = (chatId: string) => `websocket:${chatId}`;

const TOKEN_KEY = 'nanobot.token';

/** Takes the token out of the fragment (so it is not left in the address bar or history) and remembers it. */
export function takeToken(): string | null {
  const params = new URLSearchParams(window.location.hash.slice(1));
  const fromUrl = params.get('token');
  if (fromUrl) {
    localStorage.setItem(TOKEN_KEY, fromUrl);
    history.replaceState(null, '', window.location.pathname + window.location.search);
    return fromUrl;
  }
  return localStorage.getItem(TOKEN_KEY);
}

export function saveToken(token: string): void {
  localStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken(): void {
  localStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class Api {
  constructor(readonly token: string) {}

  private auth(): Record<string, string> {
    return this.token ? { authorization: `Bearer ${this.token}` } : {};
  }

  private async call<T>(path: string, init: RequestInit = {}): Promise<T> {
    const res = await fetch(path, { ...init, headers: { ...this.auth(), ...(init.headers ?? {}) } });
    const body = (await res.json().catch(() => ({}))) as { error?: string };
    if (!res.ok) throw new ApiError(res.status, body.error ?? `HTTP ${res.status}`);
    return body as T;
  }

  async sessions(): Promise<SessionListRow[]> {
    return (await this.call<{ sessions: SessionListRow[] }>('/api/sessions')).sessions;
  }

  /** A chat as the WebUI shows it (nanobot's webui-thread); null when there is nothing yet (404). */
  async thread(chatId: string): Promise<ThreadResponse | null> {
    try {
      return await this.call(`/api/sessions/${encodeURIComponent(sessionKeyOf(chatId))}/webui-thread`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    }
  }

  sidebarState(): Promise<SidebarStateView> {
    return this.call('/api/webui/sidebar-state');
  }

  status(chatId: string | null): Promise<StatusReport> {
    return this.call(`/api/status${chatId ? `?chat_id=${encodeURIComponent(chatId)}` : ''}`);
  }

  info(): Promise<{ ws_path: string }> {
    return this.call('/api/info');
  }

  upload(file: File): Promise<UploadResult> {
    return this.call('/api/uploads', {
      method: 'POST',
      headers: {
        'content-type': file.type || 'application/octet-stream',
        'x-file-name': encodeURIComponent(file.name),
      },
      body: file,
    });
  }
}
