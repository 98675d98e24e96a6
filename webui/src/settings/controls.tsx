/**
 * The pieces every settings page is built from, so the pages look and behave alike: loading a page's data, a labelled
 * field (help and error tied to it for screen readers), a secret field that never shows a saved key, a switch, a
 * notice, a confirm dialog (instead of the browser's confirm()) and a button that shows it is busy.
 */
import { type ReactNode, useCallback, useEffect, useId, useRef, useState } from 'react';
import { useI18n } from '../i18n/react.js';

export interface Loaded<T> {
  data: T | null;
  error: string | null;
  loading: boolean;
  /** Load again (after a change); the old data stays on screen meanwhile. */
  reload(): Promise<void>;
}

/** A page's data from `load()`, loaded when `key` changes; a later load wins over an earlier one. */
export function useLoad<T>(load: () => Promise<T>, key: unknown = null): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const latest = useRef(0);
  const loader = useRef(load);
  loader.current = load;
  const reload = useCallback(async () => {
    const run = ++latest.current;
    setLoading(true);
    try {
      const value = await loader.current();
      if (run !== latest.current) return;
      setData(value);
      setError(null);
    } catch (err) {
      if (run === latest.current) setError((err as Error).message);
    } finally {
      if (run === latest.current) setLoading(false);
    }
  }, []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` is what the caller's data depends on.
  useEffect(() => {
    void reload();
  }, [reload, key]);
  return { data, error, loading, reload };
}

/** The page's data, or while it loads a busy placeholder, or why it could not load with a retry button. */
export function LoadedView<T>({ loaded, children }: { loaded: Loaded<T>; children(data: T): ReactNode }) {
  const { t } = useI18n();
  if (loaded.data !== null) return <>{children(loaded.data)}</>;
  if (loaded.error !== null) {
    return (
      <Notice kind="error">
        {t('settings.loadFailed', { error: loaded.error })}{' '}
        <button type="button" className="link-button" onClick={() => void loaded.reload()}>
          {t('settings.retry')}
        </button>
      </Notice>
    );
  }
  return (
    <p className="settings-loading" aria-busy="true">
      {t('settings.loading')}
    </p>
  );
}

export function PageHeader({ title, intro }: { title: string; intro?: ReactNode }) {
  return (
    <header className="settings-page-head">
      <h2>{title}</h2>
      {intro && <p className="muted">{intro}</p>}
    </header>
  );
}

export function Section({ title, actions, children }: { title: string; actions?: ReactNode; children: ReactNode }) {
  const id = useId();
  return (
    <section className="settings-section" aria-labelledby={id}>
      <div className="settings-section-head">
        <h3 id={id}>{title}</h3>
        {actions && <div className="settings-section-actions">{actions}</div>}
      </div>
      {children}
    </section>
  );
}

interface FieldProps {
  label: string;
  value: string;
  onChange(value: string): void;
  help?: ReactNode;
  error?: string | null;
  type?: 'text' | 'url' | 'number' | 'password' | 'email';
  placeholder?: string;
  name?: string;
  required?: boolean;
  disabled?: boolean;
  autoComplete?: string;
}

export function TextField({ label, value, onChange, help, error, type = 'text', ...rest }: FieldProps) {
  const id = useId();
  const described = [help ? `${id}-help` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div className={`field${error ? ' has-error' : ''}`}>
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type={type}
        value={value}
        onChange={(event) => onChange(event.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={described}
        autoComplete={rest.autoComplete ?? 'off'}
        spellCheck={false}
        name={rest.name}
        placeholder={rest.placeholder}
        required={rest.required}
        disabled={rest.disabled}
      />
      {help && (
        <p id={`${id}-help`} className="field-help">
          {help}
        </p>
      )}
      {error && (
        <p id={`${id}-error`} className="field-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/**
 * A key or token: the saved one is never sent back in full (the gateway gives a masked hint such as `sk-…abcd`),
 * so the box starts empty and an empty box on save means "keep the saved one".
 */
export function SecretField({ savedHint, ...props }: Omit<FieldProps, 'type'> & { savedHint?: string | null }) {
  const { t } = useI18n();
  const keep = savedHint ? t('settings.secretKeep', { hint: savedHint }) : undefined;
  return (
    <TextField
      {...props}
      type="password"
      autoComplete="new-password"
      placeholder={props.placeholder ?? keep}
      help={props.help ?? keep}
    />
  );
}

export function Toggle({
  label,
  checked,
  onChange,
  disabled,
  help,
}: {
  label: string;
  checked: boolean;
  onChange(checked: boolean): void;
  disabled?: boolean;
  help?: ReactNode;
}) {
  const id = useId();
  return (
    <div className="toggle-row">
      <label className="toggle" htmlFor={id}>
        <input
          id={id}
          type="checkbox"
          role="switch"
          aria-checked={checked}
          checked={checked}
          disabled={disabled}
          aria-describedby={help ? `${id}-help` : undefined}
          onChange={(event) => onChange(event.target.checked)}
        />
        <span className="toggle-track" aria-hidden="true" />
        <span>{label}</span>
      </label>
      {help && (
        <p id={`${id}-help`} className="field-help">
          {help}
        </p>
      )}
    </div>
  );
}

/** An error is announced at once (role=alert); success and information politely (role=status). */
export function Notice({ kind, children }: { kind: 'error' | 'ok' | 'info'; children: ReactNode }) {
  return (
    <div className={`notice notice-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </div>
  );
}

/** A button whose action is async: disabled and marked busy while it runs; a failure goes to `onError`. */
export function BusyButton({
  onClick,
  children,
  kind = 'secondary',
  onError,
  disabled,
  label,
}: {
  onClick(): Promise<unknown>;
  children: ReactNode;
  kind?: 'primary' | 'secondary' | 'danger';
  onError?(message: string): void;
  disabled?: boolean;
  /** An accessible name when the visible text is not enough (an icon, or "Test" beside many rows). */
  label?: string;
}) {
  const [busy, setBusy] = useState(false);
  const run = async () => {
    setBusy(true);
    try {
      await onClick();
    } catch (err) {
      onError?.((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <button
      type="button"
      className={`button button-${kind}`}
      disabled={disabled || busy}
      aria-busy={busy || undefined}
      aria-label={label}
      onClick={() => void run()}
    >
      {children}
    </button>
  );
}

/** A modal question (the native <dialog>: focus is trapped in it, Escape cancels, focus returns afterwards). */
export function ConfirmDialog({
  open,
  title,
  children,
  confirmLabel,
  danger,
  onConfirm,
  onCancel,
}: {
  open: boolean;
  title: string;
  children?: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  onConfirm(): void;
  onCancel(): void;
}) {
  const { t } = useI18n();
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) element.showModal();
    if (!open && element.open) element.close();
  }, [open]);
  return (
    <dialog
      ref={dialog}
      className="confirm-dialog"
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        onCancel();
      }}
    >
      <h2 id={titleId}>{title}</h2>
      {children && <div className="confirm-body">{children}</div>}
      <div className="confirm-actions">
        <button type="button" className="button button-secondary" onClick={onCancel}>
          {t('settings.cancel')}
        </button>
        <button type="button" className={`button ${danger ? 'button-danger' : 'button-primary'}`} onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
