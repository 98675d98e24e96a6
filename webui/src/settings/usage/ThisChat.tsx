/**
 * The open chat's context use, the same number `/status` prints (GET /api/status?chat_id=, which counts the system
 * prompt, the tools and the live history as the agent does), and what the chat has used so far.
 */
import type { StatusReport } from '../../../../src/channels/websocket/frames.js';
import type { SettingsClient } from '../client.js';
import { LoadedView, useLoad } from '../controls.js';
import { usePageText } from '../text.js';
import { usageMessages } from './messages.js';
import type { SessionUsage } from './types.js';

export function ThisChat({
  client,
  chatId,
  usage,
}: {
  client: SettingsClient;
  chatId: string | null;
  usage: SessionUsage | undefined;
}) {
  const { t, number } = usePageText(usageMessages);
  const status = useLoad(
    () => (chatId ? client.get<StatusReport>(`status?chat_id=${encodeURIComponent(chatId)}`) : Promise.resolve(null)),
    chatId,
  );
  if (!chatId) return <p className="muted">{t('usage.noChat')}</p>;
  return (
    <LoadedView loaded={status}>
      {(report) => {
        const context = report?.context;
        // /status rounds the share to a whole per cent, and so does this.
        const share = context ? Math.round((context.used / context.window) * 100) : 0;
        return (
          <dl className="facts" data-testid="usage-this-chat">
            <dt>{t('usage.context')}</dt>
            <dd data-testid="usage-context">
              {context
                ? t('usage.contextFigure', {
                    used: context.used,
                    window: context.window,
                    share: number(share / 100, { style: 'percent' }),
                  })
                : t('usage.contextEmpty')}
            </dd>
            {context && (
              <dd className="usage-meter-row">
                <meter
                  className="meter"
                  min={0}
                  max={100}
                  value={Math.min(100, share)}
                  aria-label={t('usage.context')}
                />
              </dd>
            )}
            <dt>{t('usage.chatTokens')}</dt>
            <dd>{number(usage?.total_tokens ?? 0)}</dd>
            <dt>{t('usage.cacheHit')}</dt>
            <dd>{hitRate(usage, number)}</dd>
          </dl>
        );
      }}
    </LoadedView>
  );
}

/** Cached prompt tokens over prompt tokens, or a dash when nothing was prompted. */
export function hitRate(
  usage: Pick<SessionUsage, 'cached_tokens' | 'prompt_tokens'> | undefined,
  number: (value: number, options?: Intl.NumberFormatOptions) => string,
): string {
  if (!usage || usage.prompt_tokens <= 0) return '—';
  return number(usage.cached_tokens / usage.prompt_tokens, { style: 'percent' });
}
