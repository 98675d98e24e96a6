/**
 * The chat list's questions as dialogs (the settings' ConfirmDialog: a native modal <dialog>, Escape cancels, focus
 * comes back to the button that opened it) instead of the browser's prompt() and confirm(), which block the page,
 * cannot be styled or translated in their buttons, and are easy to dismiss by accident.
 */
import { useEffect, useState } from 'react';
import { useI18n } from '../i18n/react.js';
import { ConfirmDialog } from '../settings/controls.js';
import type { ChatRow } from './Sidebar.js';

/** A new title for a chat; an empty one goes back to the chat's own title. */
export function RenameDialog({
  row,
  onSave,
  onClose,
}: {
  row: ChatRow | null;
  onSave(chatId: string, title: string): Promise<void>;
  onClose(): void;
}) {
  const { t } = useI18n();
  const [title, setTitle] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    setTitle(row?.title ?? '');
    setError(null);
  }, [row]);
  const save = async () => {
    if (!row || busy) return;
    setBusy(true);
    try {
      await onSave(row.chat_id, title.trim());
      onClose();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <ConfirmDialog
      open={row !== null}
      title={t('dialog.renameTitle')}
      confirmLabel={t('sidebar.save')}
      onConfirm={() => void save()}
      onCancel={onClose}
    >
      <div className="field">
        <label htmlFor="rename-chat-title">{t('sidebar.newTitle')}</label>
        <input
          id="rename-chat-title"
          className="rename-title"
          value={title}
          maxLength={120}
          aria-describedby="rename-chat-help"
          aria-invalid={error ? true : undefined}
          onChange={(event) => setTitle(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.nativeEvent.isComposing) {
              event.preventDefault();
              void save();
            }
          }}
        />
        <p id="rename-chat-help" className="field-help">
          {t('dialog.renameHelp')}
        </p>
        {error && (
          <p className="field-error" role="alert">
            {error}
          </p>
        )}
      </div>
    </ConfirmDialog>
  );
}

/**
 * Deleting a chat. The gateway refuses to delete a chat its automations answer in until the user agrees to delete
 * them too: the dialog then asks that second question in place.
 */
export function DeleteDialog({
  row,
  onDelete,
  onClose,
}: {
  row: ChatRow | null;
  /** Resolves with the number of automations that blocked the delete, or 0 once deleted. */
  onDelete(chatId: string, withAutomations: boolean): Promise<number>;
  onClose(): void;
}) {
  const { t } = useI18n();
  const [automations, setAutomations] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (row) {
      setAutomations(0);
      setError(null);
    }
  }, [row]);
  const confirm = async () => {
    if (!row || busy) return;
    setBusy(true);
    try {
      const blocked = await onDelete(row.chat_id, automations > 0);
      if (blocked > 0) setAutomations(blocked);
      else onClose();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <ConfirmDialog
      open={row !== null}
      title={t('dialog.deleteTitle')}
      confirmLabel={automations > 0 ? t('dialog.deleteWithAutomations') : t('sidebar.delete')}
      danger
      onConfirm={() => void confirm()}
      onCancel={onClose}
    >
      <p className="dialog-text" aria-live="polite">
        {automations > 0
          ? t('sidebar.confirmDeleteAutomations', { count: automations })
          : t('sidebar.confirmDelete', { title: row?.title ?? '' })}
      </p>
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
    </ConfirmDialog>
  );
}
