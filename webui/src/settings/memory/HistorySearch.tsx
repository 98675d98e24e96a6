/** A search over memory/history.jsonl (plain text, case-insensitive), newest first; the newest entries to start. */
import { type FormEvent, type ReactNode, useState } from 'react';
import type { SettingsClient } from '../client.js';
import { LoadedView, TextField, useLoad } from '../controls.js';
import { usePageText } from '../text.js';
import { memoryMessages } from './messages.js';
import type { HistoryAnswer } from './types.js';

export function HistorySearch({ client }: { client: SettingsClient }) {
  const { t } = usePageText(memoryMessages);
  const [typed, setTyped] = useState('');
  const [query, setQuery] = useState('');
  const results = useLoad(
    () => client.get<HistoryAnswer>(`webui/memory/history${query ? `?q=${encodeURIComponent(query)}` : ''}`),
    query,
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setQuery(typed.trim());
  };
  return (
    <>
      <p className="muted">{t('memory.historyIntro')}</p>
      <search>
        <form className="memory-search" onSubmit={submit}>
          <TextField label={t('memory.query')} value={typed} onChange={setTyped} name="q" />
          <button type="submit" className="button button-primary">
            {t('memory.search')}
          </button>
        </form>
      </search>
      <LoadedView loaded={results}>{(answer) => <HistoryResults answer={answer} />}</LoadedView>
    </>
  );
}

function HistoryResults({ answer }: { answer: HistoryAnswer }) {
  const { t } = usePageText(memoryMessages);
  if (answer.total === 0) return <p className="muted">{t('memory.historyEmpty')}</p>;
  if (answer.matched === 0) return <p className="muted">{t('memory.noMatch', { query: answer.query })}</p>;
  return (
    <>
      <p className="muted small" role="status">
        {answer.query
          ? t('memory.matches', { matched: answer.matched, total: answer.total })
          : t('memory.latest', { shown: answer.entries.length, total: answer.total })}
      </p>
      <ol className="memory-history" data-testid="memory-history">
        {answer.entries.map((entry) => (
          <li key={entry.cursor}>
            <div className="muted small">
              {entry.timestamp}
              {entry.session_key && (
                <>
                  {' · '}
                  <code>{entry.session_key}</code>
                </>
              )}
            </div>
            <p className="memory-history-text">{highlight(entry.content, answer.query)}</p>
          </li>
        ))}
      </ol>
    </>
  );
}

/** The text with each (case-insensitive) occurrence of `query` marked. */
function highlight(text: string, query: string) {
  if (!query) return text;
  const lower = text.toLocaleLowerCase();
  const needle = query.toLocaleLowerCase();
  const parts: ReactNode[] = [];
  let from = 0;
  for (let at = lower.indexOf(needle); at !== -1; at = lower.indexOf(needle, from)) {
    parts.push(text.slice(from, at), <mark key={at}>{text.slice(at, at + needle.length)}</mark>);
    from = at + needle.length;
  }
  parts.push(text.slice(from));
  return parts;
}
