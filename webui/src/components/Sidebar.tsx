import { type FormEvent, useEffect, useState } from 'react';
import { Icon } from './Icon.js';

/** A chat in the list: its id, the title shown (a rename, its first message, or "New chat"), when it last moved. */
export interface ChatRow {
  chat_id: string;
  title: string;
  updated_at: string;
}

export interface SidebarProps {
  sessions: ChatRow[];
  active: string | null;
  open: boolean;
  onNew(): void;
  onSelect(chatId: string): void;
  onRename(chatId: string, title: string): Promise<void>;
  onDelete(chatId: string): Promise<void>;
  onClose(): void;
}

/** The chats: a column on wide screens, a drawer on phones. */
export function Sidebar(props: SidebarProps) {
  const { sessions, active, open, onClose } = props;
  // Escape closes the drawer.
  useEffect(() => {
    if (!open) return;
    const onKey = (event: KeyboardEvent) => event.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open, onClose]);
  return (
    <>
      {open && <button type="button" className="scrim" aria-label="Close the chat list" onClick={onClose} />}
      <nav className={`sidebar${open ? ' open' : ''}`} aria-label="Chats">
        <div className="sidebar-head">
          <span className="brand">
            <Icon name="bot" className="brand-icon" /> nanobot
          </span>
          <button type="button" className="new-chat" onClick={props.onNew}>
            <Icon name="plus" /> New chat
          </button>
        </div>
        <ul className="sessions">
          {sessions.length === 0 && <li className="sessions-empty">No chats yet</li>}
          {sessions.map((row) => (
            <SessionItem
              key={row.chat_id}
              row={row}
              current={row.chat_id === active}
              onSelect={props.onSelect}
              onRename={props.onRename}
              onDelete={props.onDelete}
            />
          ))}
        </ul>
      </nav>
    </>
  );
}

interface SessionItemProps extends Pick<SidebarProps, 'onSelect' | 'onRename' | 'onDelete'> {
  row: ChatRow;
  current: boolean;
}

function SessionItem({ row, current, onSelect, onRename, onDelete }: SessionItemProps) {
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState(row.title);
  const [error, setError] = useState<string | null>(null);

  const saveTitle = async (event: FormEvent) => {
    event.preventDefault();
    try {
      await onRename(row.chat_id, title.trim());
      setEditing(false);
      setError(null);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const remove = async () => {
    if (!window.confirm(`Delete “${row.title}”? This cannot be undone.`)) return;
    try {
      await onDelete(row.chat_id);
    } catch (err) {
      setError((err as Error).message);
    }
  };

  if (editing) {
    return (
      <li className="session editing">
        <form onSubmit={saveTitle}>
          <label className="sr-only" htmlFor={`rename-${row.chat_id}`}>
            New title
          </label>
          <input
            id={`rename-${row.chat_id}`}
            value={title}
            maxLength={120}
            // biome-ignore lint/a11y/noAutofocus: the user just asked to rename this chat.
            autoFocus
            onChange={(event) => setTitle(event.target.value)}
            onKeyDown={(event) => event.key === 'Escape' && setEditing(false)}
          />
          <button type="submit" className="save-title">
            Save
          </button>
        </form>
        {error && <div className="session-error">{error}</div>}
      </li>
    );
  }
  return (
    <li className={`session${current ? ' active' : ''}`}>
      <button
        type="button"
        className="session-open"
        aria-current={current ? 'page' : undefined}
        onClick={() => onSelect(row.chat_id)}
      >
        <span className="session-title">{row.title}</span>
        <span className="session-meta">{relativeTime(row.updated_at)}</span>
      </button>
      <span className="session-actions">
        <button
          type="button"
          className="icon-button small"
          aria-label={`Rename ${row.title}`}
          title="Rename"
          onClick={() => {
            setTitle(row.title);
            setEditing(true);
          }}
        >
          <Icon name="pencil" />
        </button>
        <button
          type="button"
          className="icon-button small"
          aria-label={`Delete ${row.title}`}
          title="Delete"
          onClick={() => void remove()}
        >
          <Icon name="trash" />
        </button>
      </span>
      {error && <div className="session-error">{error}</div>}
    </li>
  );
}

function relativeTime(iso: string): string {
  const seconds = (Date.now() - Date.parse(iso)) / 1000;
  if (!Number.isFinite(seconds)) return '';
  if (seconds < 60) return 'just now';
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(iso).toLocaleDateString();
}
