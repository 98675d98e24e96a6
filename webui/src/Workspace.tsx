import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type {
  ServerFrame,
  SessionListRow,
  SidebarStateView,
  UploadResult,
} from '../../src/channels/websocket/frames.js';
import { type Api, sessionKeyOf } from './api.js';
import { ChatView } from './components/ChatView.js';
import { Composer } from './components/Composer.js';
import { Icon } from './components/Icon.js';
import { type ChatRow, Sidebar } from './components/Sidebar.js';
import type { SlashCommand } from './components/SlashPalette.js';
import { StatusPanel } from './components/StatusPanel.js';
import { useI18n } from './i18n/react.js';
import type { SettingsClient } from './settings/client.js';
import { settingsRoute } from './settings/route.js';
import { ChatSocket, type ConnectionState } from './socket.js';
import { addUserMessage, applyFrame, type ChatState, emptyChat, fromThread } from './state.js';

// Settings are their own chunk: a reader who only chats never downloads them.
const SettingsView = lazy(() => import('./settings/SettingsView.js'));

const ACTIVE_KEY = 'nanobot.chat';
const KEY_PREFIX = 'websocket:';

/** nanobot's rows → the list: a rename (the sidebar state's title override) wins, then the title, then the preview. */
function chatRows(rows: SessionListRow[], sidebar: SidebarStateView | null, untitled: string): ChatRow[] {
  return rows
    .filter((row) => row.key.startsWith(KEY_PREFIX))
    .map((row) => ({
      chat_id: row.key.slice(KEY_PREFIX.length),
      title: sidebar?.title_overrides[row.key] || row.title || row.preview || untitled,
      preview: row.preview ?? '',
      updated_at: row.updated_at ?? '',
    }));
}

export interface WorkspaceProps {
  api: Api;
  /** The address for a new connection (it bootstraps again: a WebSocket token is good for one connection). */
  connectUrl(): Promise<string>;
  theme: 'light' | 'dark';
  onToggleTheme(): void;
}

export function Workspace({ api, connectUrl, theme, onToggleTheme }: WorkspaceProps) {
  const { t, tx } = useI18n();
  const [chats, setChats] = useState<Record<string, ChatState>>({});
  const [active, setActive] = useState<string | null>(null);
  const [rows, setRows] = useState<SessionListRow[]>([]);
  const [sidebar, setSidebar] = useState<SidebarStateView | null>(null);
  const [pending, setPending] = useState<ChatRow[]>([]);
  const sessions = useMemo(() => {
    const listed = chatRows(rows, sidebar, t('sidebar.newChat'));
    return [...pending.filter((p) => !listed.some((row) => row.chat_id === p.chat_id)), ...listed];
  }, [rows, sidebar, pending, t]);
  const [connection, setConnection] = useState<ConnectionState>('connecting');
  // Set once the connection drops, until it is back: retries pass through 'connecting' and must not hide the banner.
  const [lost, setLost] = useState(false);
  const onConnection = useCallback((state: ConnectionState) => {
    setConnection(state);
    if (state === 'closed') setLost(true);
    else if (state === 'open') setLost(false);
  }, []);
  const [drawer, setDrawer] = useState(false);
  // Settings are an address (`#settings/<page>`): the back button, a reload and a bookmark land on the same page.
  const [settings, setSettings] = useState(() => settingsRoute(window.location.hash));
  useEffect(() => {
    const onHash = () => {
      setSettings(settingsRoute(window.location.hash));
      setDrawer(false);
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  const leaveSettings = useCallback(() => {
    if (!settingsRoute(window.location.hash)) return;
    history.pushState(null, '', window.location.pathname + window.location.search);
    setSettings(null);
  }, []);
  const [statusOpen, setStatusOpen] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  const statusButton = useRef<HTMLButtonElement>(null);
  // Keyboard users: when the phone drawer closes (Escape, the scrim, a chat picked), focus goes back to the menu
  // button instead of being lost on a hidden element.
  const drawerWasOpen = useRef(false);
  useEffect(() => {
    if (drawerWasOpen.current && !drawer && menuButton.current?.checkVisibility()) menuButton.current.focus();
    drawerWasOpen.current = drawer;
  }, [drawer]);
  const closeStatus = useCallback(() => {
    setStatusOpen(false);
    statusButton.current?.focus();
  }, []);
  const [turnsEnded, setTurnsEnded] = useState(0);
  const [prefill, setPrefill] = useState<{ text: string; at: number } | undefined>();
  const socket = useRef<ChatSocket | null>(null);
  const wantsNewChat = useRef(false);
  /** An edit's fork is on its way: the source chat, and the question that goes back into the composer. */
  const pendingFork = useRef<{ source: string; text: string } | null>(null);
  const activeRef = useRef<string | null>(null);
  activeRef.current = active;

  const refreshSessions = useCallback(async () => {
    try {
      setRows(await api.sessions());
    } catch {
      // The list stays as it was; the next turn end tries again.
    }
  }, [api]);

  /** `force`: replace even a chat whose turn is running (after a reconnect its stream may have gaps). */
  const loadHistory = useCallback(
    async (chatId: string, force = false) => {
      try {
        const thread = await api.thread(chatId);
        const chat = thread ? fromThread(thread.messages) : emptyChat;
        setChats((all) => (all[chatId]?.busy && !force ? all : { ...all, [chatId]: chat }));
      } catch {
        setChats((all) => ({ ...all, [chatId]: all[chatId] ?? emptyChat }));
      }
    },
    [api],
  );

  const onFrame = useCallback(
    (frame: ServerFrame) => {
      if (frame.event === 'ready') return;
      if (frame.event === 'sidebar_state_updated') {
        setSidebar(frame.state as SidebarStateView);
        return;
      }
      if (frame.event === 'attached') {
        if (wantsNewChat.current) {
          wantsNewChat.current = false;
          setChats((all) => ({ ...all, [frame.chat_id]: all[frame.chat_id] ?? emptyChat }));
          setActive(frame.chat_id);
        } else if (pendingFork.current && frame.chat_id !== pendingFork.current.source) {
          // The fork holds the chat up to the edited question; the question waits in the composer.
          const { text } = pendingFork.current;
          pendingFork.current = null;
          setActive(frame.chat_id);
          void loadHistory(frame.chat_id, true);
          setPrefill({ text, at: Date.now() });
        }
        return;
      }
      // A refused fork is an error with no chat id: the edit is off.
      if (frame.event === 'error' && !frame.chat_id) pendingFork.current = null;
      const chatId = 'chat_id' in frame && frame.chat_id ? frame.chat_id : activeRef.current;
      if (!chatId) return;
      setChats((all) => ({ ...all, [chatId]: applyFrame(all[chatId] ?? emptyChat, frame) }));
      if (frame.event === 'turn_end') setTurnsEnded((n) => n + 1);
      // The gateway says when a chat's row changed (after each turn, a new chat, a rename elsewhere).
      if (frame.event === 'session_updated') void refreshSessions();
    },
    [refreshSessions, loadHistory],
  );

  // One connection for the page's lifetime.
  useEffect(() => {
    const ws = new ChatSocket(connectUrl, {
      frame: onFrame,
      state: onConnection,
      reconnected: () => {
        if (activeRef.current) void loadHistory(activeRef.current, true);
      },
    });
    socket.current = ws;
    return () => ws.close();
  }, [connectUrl, onFrame, onConnection, loadHistory]);

  // The first load opens a chat too: these leave the drawer alone (a user may have opened it meanwhile).
  const openNewChat = useCallback(() => {
    wantsNewChat.current = true;
    socket.current?.send({ type: 'new_chat' });
  }, []);
  const openChat = useCallback(
    (chatId: string) => {
      setActive(chatId);
      socket.current?.send({ type: 'attach', chat_id: chatId });
      void loadHistory(chatId);
    },
    [loadHistory],
  );
  const newChat = useCallback(() => {
    openNewChat();
    setDrawer(false);
    leaveSettings();
  }, [openNewChat, leaveSettings]);
  const selectChat = useCallback(
    (chatId: string) => {
      openChat(chatId);
      setDrawer(false);
      leaveSettings();
    },
    [openChat, leaveSettings],
  );

  const settingsClient = useMemo<SettingsClient>(
    () => ({
      get: (route) => api.get(route),
      act: <T,>(action: string, payload: Record<string, unknown> = {}) => {
        if (!socket.current) return Promise.reject(new Error(t('app.notConnected')));
        // The page that asked knows the action's answer shape (nanobot's API); the gateway validated the request.
        return socket.current.request(action, payload) as Promise<T>;
      },
    }),
    [api, t],
  );

  // First load: the chat list, and the chat that was open last time (or a fresh one). Only the latest run acts: a
  // superseded one (React's double mount, a new token) must not open a second new chat under the user's message.
  useEffect(() => {
    let superseded = false;
    void (async () => {
      const [listed, state] = await Promise.all([
        api.sessions().catch(() => [] as SessionListRow[]),
        api.sidebarState().catch(() => null),
      ]);
      if (superseded) return;
      setRows(listed);
      setSidebar(state);
      const last = localStorage.getItem(ACTIVE_KEY);
      if (last && listed.some((row) => row.key === sessionKeyOf(last))) openChat(last);
      else openNewChat();
    })();
    return () => {
      superseded = true;
    };
  }, [api, openNewChat, openChat]);

  useEffect(() => {
    if (active) localStorage.setItem(ACTIVE_KEY, active);
  }, [active]);

  // The slash commands this gateway runs, for the composer's palette (none offered if the list cannot load).
  const [commands, setCommands] = useState<SlashCommand[]>([]);
  useEffect(() => {
    api
      .get<{ commands: SlashCommand[] }>('commands')
      .then((body) => setCommands(Array.isArray(body.commands) ? body.commands : []))
      .catch(() => setCommands([]));
  }, [api]);

  const send = async (text: string, files: File[]) => {
    const chatId = active;
    if (!chatId || !socket.current) throw new Error(t('app.notConnected'));
    const uploads: UploadResult[] = [];
    for (const file of files) {
      try {
        uploads.push(await api.upload(file));
      } catch (err) {
        throw new Error(t('app.uploadFailed', { name: file.name, error: (err as Error).message }));
      }
    }
    socket.current.send({
      type: 'message',
      chat_id: chatId,
      content: text,
      media: uploads.map((u) => u.id),
      turn_id: crypto.randomUUID(),
      webui: true,
    });
    setChats((all) => ({
      ...all,
      [chatId]: addUserMessage(
        all[chatId] ?? emptyChat,
        text,
        uploads.map((u) => u.name),
      ),
    }));
    if (!sessions.some((row) => row.chat_id === chatId)) {
      const title = text.slice(0, 60) || uploads[0]?.name || t('sidebar.newChat');
      const row = { chat_id: chatId, title, preview: text, updated_at: new Date().toISOString() };
      setPending((list) => [row, ...list]);
    }
  };

  const stop = () => {
    if (active) {
      socket.current?.send({
        type: 'message',
        chat_id: active,
        content: '/stop',
        turn_id: crypto.randomUUID(),
        webui: true,
      });
    }
  };

  /** Asks the chat's last question again (its files are not sent twice: the answer already has them). */
  const retry = () => {
    const chatId = active;
    const last = chatId ? chats[chatId]?.items.findLast((item) => item.kind === 'user' && item.text) : undefined;
    if (!chatId || last?.kind !== 'user') return;
    send(last.text, []).catch((err: Error) =>
      setChats((all) => ({
        ...all,
        [chatId]: applyFrame(all[chatId] ?? emptyChat, { event: 'error', detail: err.message }),
      })),
    );
  };

  /**
   * Edits a question as nanobot's WebUI does: a fork of the chat up to just before it (nanobot's `fork_chat`; the
   * original chat stays as it was), opened with the question back in the composer to change and send.
   */
  const edit = (userIndex: number, text: string) => {
    if (!active || !socket.current) return;
    pendingFork.current = { source: active, text };
    socket.current.send({
      type: 'fork_chat',
      source_chat_id: active,
      before_user_index: userIndex,
      title: t('message.forkTitle', { title: chatTitle }),
    });
    setDrawer(false);
  };

  /** A rename is a title override in nanobot's sidebar state (the session itself is not touched). */
  const rename = async (chatId: string, title: string) => {
    if (!socket.current) throw new Error(t('app.notConnected'));
    const current = sidebar ?? (await api.sidebarState());
    const key = sessionKeyOf(chatId);
    const titles = { ...current.title_overrides };
    if (title.trim()) titles[key] = title.trim();
    else delete titles[key];
    const stored = await socket.current.request('sidebar.update', {
      state: { ...current, title_overrides: titles },
    });
    setSidebar(stored as SidebarStateView);
  };

  /** 0 once deleted; else how many automations keep the chat (the gateway asks before it deletes them too). */
  const remove = async (chatId: string, withAutomations: boolean): Promise<number> => {
    if (!socket.current) throw new Error(t('app.notConnected'));
    const key = sessionKeyOf(chatId);
    const answer = (await socket.current.request('session.delete', {
      key,
      ...(withAutomations ? { delete_automations: true } : {}),
    })) as { blocked_by_automations?: boolean; automations?: unknown[] };
    if (answer.blocked_by_automations) return Math.max(1, answer.automations?.length ?? 0);
    setPending((list) => list.filter((row) => row.chat_id !== chatId));
    setChats(({ [chatId]: _gone, ...rest }) => rest);
    await refreshSessions();
    if (chatId === active) newChat();
    return 0;
  };

  const chat = (active && chats[active]) || emptyChat;
  const chatTitle = useMemo(
    () => sessions.find((row) => row.chat_id === active)?.title ?? t('sidebar.newChat'),
    [sessions, active, t],
  );
  const title = settings ? t('settings.title') : chatTitle;
  const connectionLabel =
    connection === 'open'
      ? t('connection.open')
      : connection === 'connecting'
        ? t('connection.connecting')
        : t('connection.closed');

  return (
    <div className="app">
      <Sidebar
        sessions={sessions}
        active={settings ? null : active}
        settingsOpen={settings !== null}
        open={drawer}
        onNew={newChat}
        onSelect={selectChat}
        onRename={rename}
        onDelete={remove}
        onClose={() => setDrawer(false)}
      />
      {/* While the phone drawer is open the page behind it is out of reach (the drawer is modal there). */}
      <main className="main" inert={drawer}>
        <header className="topbar">
          <button
            ref={menuButton}
            type="button"
            className="icon-button menu"
            aria-label={t('topbar.openChats')}
            onClick={() => setDrawer(true)}
          >
            <svg viewBox="0 0 24 24" aria-hidden="true">
              <path d="M4 6h16M4 12h16M4 18h16" />
            </svg>
          </button>
          <h2 className="chat-title">{title}</h2>
          <span className={`conn ${connection}`} role="status" aria-label={connectionLabel} title={connectionLabel} />
          <button
            type="button"
            className="icon-button"
            aria-label={theme === 'dark' ? t('topbar.useLight') : t('topbar.useDark')}
            title={theme === 'dark' ? t('topbar.useLight') : t('topbar.useDark')}
            onClick={onToggleTheme}
          >
            <Icon name={theme === 'dark' ? 'sun' : 'moon'} />
          </button>
          <button
            ref={statusButton}
            type="button"
            className="icon-button"
            aria-label={t('topbar.status')}
            aria-expanded={statusOpen}
            title={t('topbar.status')}
            onClick={() => setStatusOpen(!statusOpen)}
          >
            <svg viewBox="0 0 24 24" aria-hidden="true">
              <path d="M4 20V10M10 20V4M16 20v-7M22 20H2" />
            </svg>
          </button>
        </header>
        {lost && (
          <div className="conn-banner" role="alert" data-testid="connection-banner">
            {tx('connection.lost', { command: <code>nanobot gateway</code> })}
          </div>
        )}
        {settings ? (
          <Suspense fallback={<p className="settings-loading">{t('settings.loading')}</p>}>
            <SettingsView client={settingsClient} chatId={active} page={settings.page} onBack={leaveSettings} />
          </Suspense>
        ) : (
          <>
            <ChatView
              chat={chat}
              onSuggest={(text) => setPrefill({ text, at: Date.now() })}
              onRetry={retry}
              onEdit={edit}
              onPreview={active ? (path) => api.filePreview(active, path) : undefined}
            />
            <Composer
              busy={chat.busy}
              disabled={connection !== 'open' || !active}
              onSend={send}
              onStop={stop}
              prefill={prefill}
              commands={commands}
              onTranscribe={(dataUrl, durationMs) =>
                socket.current
                  ? socket.current.transcribe(dataUrl, durationMs)
                  : Promise.reject(new Error('connection'))
              }
            />
          </>
        )}
      </main>
      {statusOpen && <StatusPanel api={api} chatId={active} version={turnsEnded} onClose={closeStatus} />}
    </div>
  );
}
