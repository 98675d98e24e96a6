/** The memory repository's commits, newest first: each one's diff on demand, and a restore behind a question. */
import { useId, useState } from 'react';
import type { SettingsClient } from '../client.js';
import { ConfirmDialog, Notice } from '../controls.js';
import { usePageText } from '../text.js';
import { memoryMessages } from './messages.js';
import type { MemoryCommit, MemoryCommitDetail } from './types.js';

interface Props {
  commits: MemoryCommit[];
  client: SettingsClient;
  onRestored(): Promise<void>;
}

export function DreamLog({ commits, client, onRestored }: Props) {
  const { t } = usePageText(memoryMessages);
  const [asking, setAsking] = useState<MemoryCommit | null>(null);
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const restore = async (commit: MemoryCommit) => {
    setAsking(null);
    try {
      const result = await client.act<{ restored: string[]; commit: string | null }>('memory.restore', {
        sha: commit.sha,
      });
      setNotice({
        kind: 'ok',
        text: result.commit
          ? t('memory.restored', { files: result.restored.join(', '), sha: result.commit.slice(0, 8) })
          : t('memory.restoredNothing'),
      });
      await onRestored();
    } catch (err) {
      setNotice({ kind: 'error', text: (err as Error).message });
    }
  };
  return (
    <>
      {notice && <Notice kind={notice.kind}>{notice.text}</Notice>}
      {commits.length === 0 ? (
        <p className="muted">{t('memory.logEmpty')}</p>
      ) : (
        <ol className="memory-log" data-testid="memory-log">
          {commits.map((commit) => (
            <CommitRow key={commit.sha} commit={commit} client={client} onRestore={() => setAsking(commit)} />
          ))}
        </ol>
      )}
      <ConfirmDialog
        open={asking !== null}
        title={t('memory.restoreTitle')}
        confirmLabel={t('memory.restoreConfirm')}
        danger
        onConfirm={() => asking && void restore(asking)}
        onCancel={() => setAsking(null)}
      >
        <p>{t('memory.restoreBody', { title: asking?.title ?? '' })}</p>
      </ConfirmDialog>
    </>
  );
}

function CommitRow({ commit, client, onRestore }: { commit: MemoryCommit; client: SettingsClient; onRestore(): void }) {
  const { t, dateTime } = usePageText(memoryMessages);
  const [detail, setDetail] = useState<MemoryCommitDetail | null>(null);
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const titleId = useId();
  const diffId = useId();
  const [busy, setBusy] = useState(false);
  const toggle = async () => {
    if (open) return setOpen(false);
    setBusy(true);
    try {
      if (!detail) setDetail(await client.get<MemoryCommitDetail>(`webui/memory/log/${commit.sha}`));
      setError(null);
      setOpen(true);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <li className="memory-commit">
      <div className="memory-commit-head">
        <div className="memory-commit-text">
          <strong id={titleId}>{commit.title}</strong>
          <span className="muted small">
            {dateTime(commit.date)} · <code>{commit.short_sha}</code>
          </span>
        </div>
        <div className="memory-commit-actions">
          <button
            type="button"
            className="button"
            aria-expanded={open}
            aria-controls={diffId}
            aria-describedby={titleId}
            aria-busy={busy || undefined}
            disabled={busy}
            onClick={() => void toggle()}
          >
            {open ? t('memory.hideChanges') : t('memory.showChanges')}
          </button>
          {commit.can_restore ? (
            <button
              type="button"
              className="button button-danger"
              aria-label={t('memory.restoreLabel', { title: commit.title })}
              onClick={onRestore}
            >
              {t('memory.restore')}
            </button>
          ) : (
            <span className="muted small">{t('memory.baseline')}</span>
          )}
        </div>
      </div>
      {error && <Notice kind="error">{error}</Notice>}
      <div id={diffId} hidden={!open}>
        {open && detail && <CommitDiff detail={detail} />}
      </div>
    </li>
  );
}

function CommitDiff({ detail }: { detail: MemoryCommitDetail }) {
  const { t } = usePageText(memoryMessages);
  if (detail.files.length === 0) return <p className="muted">{t('memory.noDiff')}</p>;
  return (
    <div className="memory-diff" data-testid="memory-diff">
      <ul className="memory-diff-files">
        {detail.files.map((file) => (
          <li key={file.path}>
            <code>{file.path}</code>{' '}
            <span className="memory-diff-stat">
              {t('memory.fileStat', { added: file.added, removed: file.removed })}
            </span>
          </li>
        ))}
      </ul>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a wide diff scrolls sideways, so the keyboard must reach it */}
      <section className="memory-diff-text" tabIndex={0} aria-label={t('memory.diffLabel')}>
        <pre>
          {detail.diff.split('\n').map((line, index) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: the lines of one diff never move
            <span key={index} className={lineClass(line)}>
              {line}
              {'\n'}
            </span>
          ))}
        </pre>
      </section>
      {detail.diff_truncated && <p className="muted">{t('memory.diffCut', { sha: detail.short_sha })}</p>}
    </div>
  );
}

function lineClass(line: string): string {
  if (line.startsWith('+++') || line.startsWith('---')) return 'memory-diff-file';
  if (line.startsWith('@@')) return 'memory-diff-hunk';
  if (line.startsWith('+')) return 'memory-diff-add';
  if (line.startsWith('-')) return 'memory-diff-del';
  return '';
}
