/** The days with use, newest first, as numbers (the bars show their shape; this is what a screen reader reads). */
import { usePageText } from '../text.js';
import { usageMessages } from './messages.js';
import { hitRate } from './ThisChat.js';
import type { UsageDay } from './types.js';

export function DayTable({ days }: { days: UsageDay[] }) {
  const { t, number } = usePageText(usageMessages);
  const rows = days.filter((day) => day.total_tokens > 0).sort((a, b) => b.date.localeCompare(a.date));
  return (
    <details className="usage-days">
      <summary>{t('usage.perDay')}</summary>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a wide table scrolls sideways on a phone: the keyboard must reach it */}
      <section className="usage-table-wrap" tabIndex={0} aria-label={t('usage.perDay')}>
        <table className="usage-table" data-testid="usage-days">
          <thead>
            <tr>
              <th scope="col">{t('usage.col.day')}</th>
              <th scope="col">{t('usage.col.tokens')}</th>
              <th scope="col">{t('usage.col.prompt')}</th>
              <th scope="col">{t('usage.col.completion')}</th>
              <th scope="col">{t('usage.col.cache')}</th>
              <th scope="col">{t('usage.col.requests')}</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((day) => (
              <tr key={day.date}>
                <th scope="row">{day.date}</th>
                <td>{number(day.total_tokens)}</td>
                <td>{number(day.prompt_tokens)}</td>
                <td>{number(day.completion_tokens)}</td>
                <td>{hitRate(day, number)}</td>
                <td>{number(day.requests)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </details>
  );
}
