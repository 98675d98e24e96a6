/**
 * How the page signs in, as nanobot's own WebUI does: `GET /webui/bootstrap` (with the token from the URL fragment
 * `#token=…` or this browser, when there is one) hands out a short-lived API token and a one-connection WebSocket
 * token. A browser on the gateway's machine needs no token unless the gateway is configured with one.
 */
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

/** What `file-preview` answers (the fields the chat shows). */
export interface FilePreviewBody {
  display_path: string;
  content: string;
  size: number;
  truncated: boolean;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** What `/webui/bootstrap` answers (the fields this page uses). */
export interface Bootstrap {
  token?: string;
  api_token?: string;
  ws_path: string;
  ws_url?: string;
  expires_in?: number;
}

/** The bootstrap, with the token as nanobot's secret header; an ApiError (401/403: a token is needed) otherwise. */
export async function fetchBootstrap(secret: string): Promise<Bootstrap> {
  const res = await fetch('/webui/bootstrap', { headers: secret ? { 'x-nanobot-auth': secret } : {} });
  const body = (await res.json().catch(() => ({}))) as Partial<Bootstrap> & { error?: string };
  if (!res.ok) throw new ApiError(res.status, body.error ?? `HTTP ${res.status}`);
  if (typeof body.ws_path !== 'string') throw new ApiError(502, 'the gateway sent no ws_path');
  return body as Bootstrap;
}

/** The WebSocket URL of a bootstrap: its `ws_url` (or this page's host and `ws_path`) with its one-time token. */
export function socketUrl(boot: Bootstrap): string {
  const scheme = window.location.protocol === 'https:' ? 'wss' : 'ws';
  const base =
    boot.ws_url && /^wss?:\/\//.test(boot.ws_url) ? boot.ws_url : `${scheme}://${window.location.host}${boot.ws_path}`;
  const url = new URL(base);
  url.searchParams.set('client_id', 'webui');
  if (boot.token) url.searchParams.set('token', boot.token);
  return url.toString();
}

export class Api {
  /** The bootstrap's API token; replaced when the page bootstraps again before it expires. */
  constructor(public token: string) {}

  private auth(): Record<string, string> {
    return this.token ? { authorization: `Bearer ${this.token}` } : {};
  }

  private async call<T>(path: string, init: RequestInit = {}): Promise<T> {
    const res = await fetch(path, { ...init, headers: { ...this.auth(), ...(init.headers ?? {}) } });
    const body = (await res.json().catch(() => ({}))) as { error?: string };
    if (!res.ok) throw new ApiError(res.status, body.error ?? `HTTP ${res.status}`);
    return body as T;
  }

  /** `GET /api/<route>` of the settings API (src/webui/api.ts); the answer's shape is the caller's to know. */
  get<T>(route: string): Promise<T> {
    return this.call<T>(`/api/${route}`);
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

  /** The start of a workspace file the agent wrote (nanobot's file-preview; confined to the workspace). */
  filePreview(chatId: string, path: string): Promise<FilePreviewBody> {
    const key = encodeURIComponent(sessionKeyOf(chatId));
    return this.call(`/api/sessions/${key}/file-preview?path=${encodeURIComponent(path)}`);
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
