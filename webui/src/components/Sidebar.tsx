import { type FormEvent, useEffect, useRef, useState } from 'react';
import { useI18n } from '../i18n/react.js';
import { Icon } from './Icon.js';
import { LanguagePicker } from './LanguagePicker.js';

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
  /** Settings are showing (their link is marked as the current page). */
  settingsOpen: boolean;
  onNew(): void;
  onSelect(chatId: string): void;
  onRename(chatId: string, title: string): Promise<void>;
  onDelete(chatId: string): Promise<void>;
  onClose(): void;
}

/** The chats: a column on wide screens, a drawer on phones. */
export function Sidebar(props: SidebarProps) {
  const { sessions, active, open, onClose } = props;
  const { t } = useI18n();
  const drawer = useRef<HTMLElement>(null);
  // Escape closes the drawer; opening it puts the keyboard's focus on it (on the drawer itself, not its first button:
  // the Enter that opened it would otherwise also press that button).
  useEffect(() => {
    if (!open) return;
    drawer.current?.focus();
    const onKey = (event: KeyboardEvent) => event.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open, onClose]);
  return (
    <>
      {open && <button type="button" className="scrim" aria-label={t('sidebar.close')} onClick={onClose} />}
      <nav ref={drawer} tabIndex={-1} className={`sidebar${open ? ' open' : ''}`} aria-label={t('sidebar.label')}>
        <div className="sidebar-head">
          <span className="brand">
            <Icon name="bot" className="brand-icon" /> nanobot
          </span>
          <button type="button" className="new-chat" onClick={props.onNew}>
            <Icon name="plus" /> {t('sidebar.newChat')}
          </button>
        </div>
        <ul className="sessions">
          {sessions.length === 0 && <li className="sessions-empty">{t('sidebar.empty')}</li>}
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
        <div className="sidebar-foot">
          <a className="sidebar-settings" href="#settings" aria-current={props.settingsOpen ? 'page' : undefined}>
            <Icon name="gear" /> {t('settings.title')}
          </a>
          <LanguagePicker className="sidebar-language" />
        </div>
      </nav>
    </>
  );
}

interface SessionItemProps extends Pick<SidebarProps, 'onSelect' | 'onRename' | 'onDelete'> {
  row: ChatRow;
  current: boolean;
}

function SessionItem({ row, current, onSelect, onRename, onDelete }: SessionItemProps) {
  const { t, ago } = useI18n();
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
    if (!window.confirm(t('sidebar.confirmDelete', { title: row.title }))) return;
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
            {t('sidebar.newTitle')}
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
            {t('sidebar.save')}
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
        <span className="session-meta">{ago(row.updated_at)}</span>
      </button>
      <span className="session-actions">
        <button
          type="button"
          className="icon-button small"
          aria-label={t('sidebar.renameChat', { title: row.title })}
          title={t('sidebar.rename')}
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
          aria-label={t('sidebar.deleteChat', { title: row.title })}
          title={t('sidebar.delete')}
          onClick={() => void remove()}
        >
          <Icon name="trash" />
        </button>
      </span>
      {error && <div className="session-error">{error}</div>}
    </li>
  );
}
