import { useEffect, useRef, useState } from 'react';
import { useI18n } from '../i18n/react.js';
import { DeleteDialog, RenameDialog } from './ChatDialogs.js';
import { Icon } from './Icon.js';
import { LanguagePicker } from './LanguagePicker.js';

/**
 * A chat in the list: its id, the title shown (a rename, its first message, or "New chat"), the gateway's preview of
 * its text (searched too), when it last moved.
 */
export interface ChatRow {
  chat_id: string;
  title: string;
  preview: string;
  updated_at: string;
}

/** The rows whose title or preview holds the query (any case); all of them for an empty query. */
export function matchingRows(rows: readonly ChatRow[], query: string): ChatRow[] {
  const wanted = query.trim().toLocaleLowerCase();
  if (!wanted) return [...rows];
  return rows.filter(
    (row) => row.title.toLocaleLowerCase().includes(wanted) || row.preview.toLocaleLowerCase().includes(wanted),
  );
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
  /** Resolves with how many automations keep the chat (nothing deleted yet), or 0 once it is gone. */
  onDelete(chatId: string, withAutomations: boolean): Promise<number>;
  onClose(): void;
}

/** The chats: a column on wide screens, a drawer on phones. */
export function Sidebar(props: SidebarProps) {
  const { sessions, active, open, onClose } = props;
  const { t } = useI18n();
  const drawer = useRef<HTMLElement>(null);
  const newButton = useRef<HTMLButtonElement>(null);
  const [renaming, setRenaming] = useState<ChatRow | null>(null);
  const [deleting, setDeleting] = useState<ChatRow | null>(null);
  const [query, setQuery] = useState('');
  const shown = matchingRows(sessions, query);
  const searching = query.trim() !== '';
  // Escape closes the drawer (unless a dialog in it takes the Escape); opening it puts the keyboard's focus on it
  // (on the drawer itself, not its first button: the Enter that opened it would otherwise also press that button).
  useEffect(() => {
    if (!open) return;
    drawer.current?.focus();
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape' && !drawer.current?.querySelector('dialog[open]')) onClose();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open, onClose]);
  // After a delete the row and the button that opened the dialog are gone: once the dialog has closed (its effect
  // runs before this one), focus goes to a control that stays instead of being dropped on the page.
  const refocus = useRef(false);
  useEffect(() => {
    if (deleting === null && refocus.current) {
      refocus.current = false;
      newButton.current?.focus();
    }
  }, [deleting]);
  const deleted = async (chatId: string, withAutomations: boolean) => {
    const blocked = await props.onDelete(chatId, withAutomations);
    if (blocked === 0) refocus.current = true;
    return blocked;
  };
  return (
    <>
      {open && <button type="button" className="scrim" aria-label={t('sidebar.close')} onClick={onClose} />}
      <nav ref={drawer} tabIndex={-1} className={`sidebar${open ? ' open' : ''}`} aria-label={t('sidebar.label')}>
        <div className="sidebar-head">
          <span className="brand">
            <Icon name="bot" className="brand-icon" /> nanobot
          </span>
          <button ref={newButton} type="button" className="new-chat" onClick={props.onNew}>
            <Icon name="plus" /> {t('sidebar.newChat')}
          </button>
        </div>
        {sessions.length > 0 && (
          <search className="sidebar-search">
            <label htmlFor="chat-search" className="sr-only">
              {t('search.label')}
            </label>
            <Icon name="search" className="search-icon" />
            <input
              id="chat-search"
              className="chat-search-input"
              type="search"
              value={query}
              placeholder={t('search.placeholder')}
              autoComplete="off"
              aria-describedby={searching ? 'chat-search-count' : undefined}
              onChange={(event) => setQuery(event.target.value)}
              onKeyDown={(event) => {
                // Escape empties the search first (and leaves the phone drawer open); a second one closes it.
                if (event.key === 'Escape' && query) {
                  event.stopPropagation();
                  setQuery('');
                }
              }}
            />
          </search>
        )}
        <div id="chat-search-count" className="sr-only" role="status">
          {searching ? t('search.count', { count: shown.length }) : ''}
        </div>
        <ul className="sessions" aria-label={searching ? t('search.results') : undefined}>
          {sessions.length === 0 && <li className="sessions-empty">{t('sidebar.empty')}</li>}
          {sessions.length > 0 && shown.length === 0 && (
            <li className="sessions-empty">{t('search.none', { query: query.trim() })}</li>
          )}
          {shown.map((row) => (
            <SessionItem
              key={row.chat_id}
              row={row}
              current={row.chat_id === active}
              onSelect={props.onSelect}
              onRename={() => setRenaming(row)}
              onDelete={() => setDeleting(row)}
            />
          ))}
        </ul>
        <div className="sidebar-foot">
          <a className="sidebar-settings" href="#settings" aria-current={props.settingsOpen ? 'page' : undefined}>
            <Icon name="gear" /> {t('settings.title')}
          </a>
          <LanguagePicker className="sidebar-language" />
        </div>
        <RenameDialog row={renaming} onSave={props.onRename} onClose={() => setRenaming(null)} />
        <DeleteDialog row={deleting} onDelete={deleted} onClose={() => setDeleting(null)} />
      </nav>
    </>
  );
}

interface SessionItemProps {
  row: ChatRow;
  current: boolean;
  onSelect(chatId: string): void;
  onRename(): void;
  onDelete(): void;
}

function SessionItem({ row, current, onSelect, onRename, onDelete }: SessionItemProps) {
  const { t, ago } = useI18n();
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
          aria-haspopup="dialog"
          title={t('sidebar.rename')}
          onClick={onRename}
        >
          <Icon name="pencil" />
        </button>
        <button
          type="button"
          className="icon-button small"
          aria-label={t('sidebar.deleteChat', { title: row.title })}
          aria-haspopup="dialog"
          title={t('sidebar.delete')}
          onClick={onDelete}
        >
          <Icon name="trash" />
        </button>
      </span>
    </li>
  );
}
