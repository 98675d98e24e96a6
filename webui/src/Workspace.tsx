import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { ServerFrame, SessionRow, UploadResult } from '../../src/channels/websocket/frames.js';
import type { Api } from './api.js';
import { ChatView } from './components/ChatView.js';
import { Composer } from './components/Composer.js';
import { Icon } from './components/Icon.js';
import { Sidebar } from './components/Sidebar.js';
import { StatusPanel } from './components/StatusPanel.js';
import { ChatSocket, type ConnectionState } from './socket.js';
import { addUserMessage, applyFrame, type ChatState, emptyChat, fromHistory } from './state.js';

const ACTIVE_KEY = 'nanobot.chat';

export interface WorkspaceProps {
  api: Api;
  /** The address for a new connection (it bootstraps again: a WebSocket token is good for one connection). */
  connectUrl(): Promise<string>;
  theme: 'light' | 'dark';
  onToggleTheme(): void;
}

export function Workspace({ api, connectUrl, theme, onToggleTheme }: WorkspaceProps) {
  const [chats, setChats] = useState<Record<string, ChatState>>({});
  const [active, setActive] = useState<string | null>(null);
  const [sessions, setSessions] = useState<SessionRow[]>([]);
  const [connection, setConnection] = useState<ConnectionState>('connecting');
  // Set once the connection drops, until it is back: retries pass through 'connecting' and must not hide the banner.
  const [lost, setLost] = useState(false);
  const onConnection = useCallback((state: ConnectionState) => {
    setConnection(state);
    if (state === 'closed') setLost(true);
    else if (state === 'open') setLost(false);
  }, []);
  const [drawer, setDrawer] = useState(false);
  const [statusOpen, setStatusOpen] = useState(false);
  const [turnsEnded, setTurnsEnded] = useState(0);
  const [prefill, setPrefill] = useState<{ text: string; at: number } | undefined>();
  const socket = useRef<ChatSocket | null>(null);
  const wantsNewChat = useRef(false);
  const activeRef = useRef<string | null>(null);
  activeRef.current = active;

  const refreshSessions = useCallback(async () => {
    try {
      setSessions(await api.sessions());
    } catch {
      // The list stays as it was; the next turn end tries again.
    }
  }, [api]);

  /** `force`: replace even a chat whose turn is running (after a reconnect its stream may have gaps). */
  const loadHistory = useCallback(
    async (chatId: string, force = false) => {
      try {
        const history = await api.history(chatId);
        setChats((all) => (all[chatId]?.busy && !force ? all : { ...all, [chatId]: fromHistory(history.entries) }));
      } catch {
        setChats((all) => ({ ...all, [chatId]: all[chatId] ?? emptyChat }));
      }
    },
    [api],
  );

  const onFrame = useCallback(
    (frame: ServerFrame) => {
      if (frame.event === 'ready') return;
      if (frame.event === 'attached') {
        if (wantsNewChat.current) {
          wantsNewChat.current = false;
          setChats((all) => ({ ...all, [frame.chat_id]: all[frame.chat_id] ?? emptyChat }));
          setActive(frame.chat_id);
        }
        return;
      }
      const chatId = 'chat_id' in frame && frame.chat_id ? frame.chat_id : activeRef.current;
      if (!chatId) return;
      setChats((all) => ({ ...all, [chatId]: applyFrame(all[chatId] ?? emptyChat, frame) }));
      if (frame.event === 'turn_end') setTurnsEnded((n) => n + 1);
      // The gateway says when a chat's row changed (after each turn, a new chat, a rename elsewhere).
      if (frame.event === 'session_updated') void refreshSessions();
    },
    [refreshSessions],
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

  const newChat = useCallback(() => {
    wantsNewChat.current = true;
    socket.current?.send({ type: 'new_chat' });
    setDrawer(false);
  }, []);

  const selectChat = useCallback(
    (chatId: string) => {
      setActive(chatId);
      setDrawer(false);
      socket.current?.send({ type: 'attach', chat_id: chatId });
      void loadHistory(chatId);
    },
    [loadHistory],
  );

  // First load: the chat list, and the chat that was open last time (or a fresh one).
  useEffect(() => {
    void (async () => {
      const rows = await api.sessions().catch(() => [] as SessionRow[]);
      setSessions(rows);
      const last = localStorage.getItem(ACTIVE_KEY);
      if (last && rows.some((row) => row.chat_id === last)) selectChat(last);
      else newChat();
    })();
  }, [api, newChat, selectChat]);

  useEffect(() => {
    if (active) localStorage.setItem(ACTIVE_KEY, active);
  }, [active]);

  const send = async (text: string, files: File[]) => {
    const chatId = active;
    if (!chatId || !socket.current) throw new Error('Not connected yet.');
    const uploads: UploadResult[] = [];
    for (const file of files) {
      try {
        uploads.push(await api.upload(file));
      } catch (err) {
        throw new Error(`Could not upload ${file.name}: ${(err as Error).message}`);
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
      const title = text.slice(0, 60) || uploads[0]?.name || 'New chat';
      setSessions((rows) => [
        { chat_id: chatId, title, updated_at: new Date().toISOString(), message_count: 1 },
        ...rows,
      ]);
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

  const rename = async (chatId: string, title: string) => {
    await api.rename(chatId, title);
    await refreshSessions();
  };

  const remove = async (chatId: string) => {
    await api.remove(chatId);
    setChats(({ [chatId]: _gone, ...rest }) => rest);
    await refreshSessions();
    if (chatId === active) newChat();
  };

  const chat = (active && chats[active]) || emptyChat;
  const title = useMemo(() => sessions.find((row) => row.chat_id === active)?.title ?? 'New chat', [sessions, active]);

  return (
    <div className="app">
      <Sidebar
        sessions={sessions}
        active={active}
        open={drawer}
        onNew={newChat}
        onSelect={selectChat}
        onRename={rename}
        onDelete={remove}
        onClose={() => setDrawer(false)}
      />
      <main className="main">
        <header className="topbar">
          <button
            type="button"
            className="icon-button menu"
            aria-label="Open the chat list"
            onClick={() => setDrawer(true)}
          >
            <svg viewBox="0 0 24 24" aria-hidden="true">
              <path d="M4 6h16M4 12h16M4 18h16" />
            </svg>
          </button>
          <h2 className="chat-title">{title}</h2>
          <span
            className={`conn ${connection}`}
            role="status"
            aria-label={`Connection ${connection}`}
            title={connection}
          />
          <button
            type="button"
            className="icon-button"
            aria-label={theme === 'dark' ? 'Use the light theme' : 'Use the dark theme'}
            title="Toggle theme"
            onClick={onToggleTheme}
          >
            <Icon name={theme === 'dark' ? 'sun' : 'moon'} />
          </button>
          <button
            type="button"
            className="icon-button"
            aria-label="Status"
            aria-expanded={statusOpen}
            title="Status"
            onClick={() => setStatusOpen(!statusOpen)}
          >
            <svg viewBox="0 0 24 24" aria-hidden="true">
              <path d="M4 20V10M10 20V4M16 20v-7M22 20H2" />
            </svg>
          </button>
        </header>
        {lost && (
          <div className="conn-banner" role="alert" data-testid="connection-banner">
            Lost the connection to the nanobot gateway; reconnecting… If it stopped, start it again with{' '}
            <code>nanobot gateway</code>.
          </div>
        )}
        <ChatView chat={chat} api={api} onSuggest={(text) => setPrefill({ text, at: Date.now() })} />
        <Composer
          busy={chat.busy}
          disabled={connection !== 'open' || !active}
          onSend={send}
          onStop={stop}
          prefill={prefill}
        />
      </main>
      {statusOpen && (
        <StatusPanel api={api} chatId={active} version={turnsEnded} onClose={() => setStatusOpen(false)} />
      )}
    </div>
  );
}
