/** Tokens per session (each session's token_stats, as /status reports them), newest first; cost where priced. */
import { usePageText } from '../text.js';
import { usageMessages } from './messages.js';
import { hitRate } from './ThisChat.js';
import type { SessionsUsage } from './types.js';

export function SessionTable({ data, currentKey }: { data: SessionsUsage; currentKey: string | null }) {
  const { t, tx, number, ago } = usePageText(usageMessages);
  const priced = data.priced || data.sessions.some((row) => row.cost_usd > 0);
  const source = {
    user: t('usage.source.user'),
    cron: t('usage.source.cron'),
    dream: t('usage.source.dream'),
    api: t('usage.source.api'),
    system: t('usage.source.system'),
  };
  const usd = (value: number) =>
    number(value, { style: 'currency', currency: 'USD', maximumFractionDigits: value >= 1 ? 2 : 4 });
  return (
    <>
      {data.sessions.length === 0 ? (
        <p className="muted">{t('usage.noSessions')}</p>
      ) : (
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a wide table scrolls sideways on a phone: the keyboard must reach it
        <section className="usage-table-wrap" tabIndex={0} aria-label={t('usage.sessionsTable')}>
          <table className="usage-table" data-testid="usage-sessions">
            <thead>
              <tr>
                <th scope="col">{t('usage.col.session')}</th>
                <th scope="col">{t('usage.col.tokens')}</th>
                <th scope="col">{t('usage.col.cache')}</th>
                <th scope="col">{t('usage.col.calls')}</th>
                {priced && <th scope="col">{t('usage.col.cost')}</th>}
                <th scope="col">{t('usage.col.updated')}</th>
              </tr>
            </thead>
            <tbody>
              {data.sessions.map((row) => (
                <tr key={row.key} className={row.key === currentKey ? 'usage-current' : undefined}>
                  <th scope="row">
                    <span className="usage-session-title">{row.title || row.key}</span>
                    <span className="muted small">
                      {source[row.source] ?? source.system}
                      {row.key === currentKey && ` · ${t('usage.thisChatTag')}`}
                    </span>
                  </th>
                  <td>{number(row.total_tokens)}</td>
                  <td>{hitRate(row, number)}</td>
                  <td>{number(row.llm_calls)}</td>
                  {priced && <td>{row.cost_usd > 0 ? usd(row.cost_usd) : '—'}</td>}
                  <td>{ago(row.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      {!priced && (
        <p className="muted small">{tx('usage.noPrices', { key: <code>agents.defaults.modelPrices</code> })}</p>
      )}
    </>
  );
}
