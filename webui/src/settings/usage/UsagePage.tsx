/**
 * Settings › Usage: the open chat's context use (the number /status prints) and its tokens; tokens per day for the
 * last 30 days (`GET /api/settings/usage`, nanobot's token-usage.json) as bars and a table; tokens per session
 * (`GET /api/webui/usage/sessions`, each session's token_stats), with the cost where prices are configured.
 */
import { sessionKeyOf } from '../../api.js';
import { LoadedView, PageHeader, Section, useLoad } from '../controls.js';
import type { SettingsPageProps } from '../pages.js';
import { usePageText } from '../text.js';
import { DayTable } from './DayTable.js';
import { usageMessages } from './messages.js';
import { SessionTable } from './SessionTable.js';
import { ThisChat } from './ThisChat.js';
import type { SessionsUsage, UsageDay, UsageReport } from './types.js';
import './usage.css';

/** The last 30 calendar days up to today, with a zero for a day without use. */
function last30(days: readonly UsageDay[]): { date: string; tokens: number }[] {
  const byDate = new Map(days.map((day) => [day.date, day.total_tokens]));
  const end = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  return Array.from({ length: 30 }, (_, index) => {
    const at = new Date(end);
    at.setUTCDate(end.getUTCDate() - (29 - index));
    const date = at.toISOString().slice(0, 10);
    return { date, tokens: byDate.get(date) ?? 0 };
  });
}

export function UsagePage({ client, chatId }: SettingsPageProps) {
  const { t, number, locale } = usePageText(usageMessages);
  const loaded = useLoad(() => client.get<UsageReport>('settings/usage'));
  const sessions = useLoad(() => client.get<SessionsUsage>('webui/usage/sessions'));
  const currentKey = chatId ? sessionKeyOf(chatId) : null;
  const days = (count: number) =>
    new Intl.PluralRules(locale).select(count) === 'one'
      ? t('usage.daysOne', { count })
      : t('usage.daysOther', { count });
  return (
    <>
      <PageHeader title={t('usage.title')} intro={t('usage.intro')} />
      <Section title={t('usage.thisChat')}>
        <ThisChat
          client={client}
          chatId={chatId}
          usage={sessions.data?.sessions.find((row) => row.key === currentKey)}
        />
      </Section>
      <LoadedView loaded={loaded}>
        {(report) => {
          const bars = last30(report.days);
          const since = bars[0]?.date ?? '';
          const recent = report.days.filter((day) => day.date >= since);
          const prompt = recent.reduce((sum, day) => sum + day.prompt_tokens, 0);
          const cached = recent.reduce((sum, day) => sum + day.cached_tokens, 0);
          const peak = Math.max(1, ...bars.map((bar) => bar.tokens));
          return (
            <Section title={t('usage.last30')}>
              <dl className="facts" data-testid="usage-facts">
                <dt>{t('usage.tokens30')}</dt>
                <dd>{number(report.total_tokens_30d)}</dd>
                <dt>{t('usage.requests30')}</dt>
                <dd>{number(report.requests_30d)}</dd>
                <dt>{t('usage.cacheHit30')}</dt>
                <dd>{prompt > 0 ? number(cached / prompt, { style: 'percent' }) : '—'}</dd>
                <dt>{t('usage.activeDays')}</dt>
                <dd>{number(report.active_days_30d)}</dd>
                <dt>{t('usage.streak')}</dt>
                <dd>{days(report.current_streak_days)}</dd>
              </dl>
              {report.total_tokens_30d === 0 ? (
                <p className="muted">{t('usage.none')}</p>
              ) : (
                <>
                  <p className="muted small usage-peak">{t('usage.peak', { tokens: peak })}</p>
                  <ol className="usage-bars" data-testid="usage-bars">
                    {bars.map((bar) => {
                      const label = t('usage.dayBar', { date: bar.date, tokens: bar.tokens });
                      return (
                        <li key={bar.date} title={label}>
                          <span className="usage-bar" style={{ height: `${Math.round((bar.tokens / peak) * 100)}%` }} />
                          <span className="sr-only">{label}</span>
                        </li>
                      );
                    })}
                  </ol>
                  <div className="usage-axis muted small" aria-hidden="true">
                    <span>{bars[0]?.date}</span>
                    <span>{bars.at(-1)?.date}</span>
                  </div>
                  <DayTable days={recent} />
                </>
              )}
            </Section>
          );
        }}
      </LoadedView>
      <Section title={t('usage.sessions')}>
        <p className="muted">{t('usage.sessionsIntro')}</p>
        <LoadedView loaded={sessions}>{(data) => <SessionTable data={data} currentKey={currentKey} />}</LoadedView>
      </Section>
    </>
  );
}
