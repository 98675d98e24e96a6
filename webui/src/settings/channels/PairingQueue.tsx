/**
 * The pairing queue: strangers who wrote to the agent on a channel that does not list them got a code; here they
 * are approved (`settings.pairing.approve`: their next message is answered) or denied, and the senders let in by
 * pairing can be revoked. The same store `nanobot channels pair …` changes.
 */
import { type ReactNode, useState } from 'react';
import type { SettingsClient } from '../client.js';
import { BusyButton, ConfirmDialog, Notice } from '../controls.js';
import { usePageText } from '../text.js';
import { channelsMessages } from './messages.js';
import type { ApprovedSender, PairingPayload, PairingRequest } from './types.js';

type Pending = { kind: 'deny'; request: PairingRequest } | { kind: 'revoke'; sender: ApprovedSender } | null;

export function PairingQueue({
  pairing,
  client,
  channelName,
  onChanged,
}: {
  pairing: PairingPayload;
  client: SettingsClient;
  /** A channel's display name by its id. */
  channelName(name: string): string;
  onChanged(): Promise<void>;
}) {
  const { t, tx, ago } = usePageText(channelsMessages);
  const [asking, setAsking] = useState<Pending>(null);
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const approved = pairing.approved ?? [];
  const who = (sender: { sender_id: string; username?: string }) =>
    sender.username ? `${sender.sender_id} (@${sender.username.replace(/^@/, '')})` : sender.sender_id;
  const hidden = (text: string): ReactNode => <span className="sr-only"> {text} </span>;

  const run = async (action: string, payload: Record<string, unknown>, done: string) => {
    setOutcome(null);
    try {
      await client.act<PairingPayload>(action, payload);
      setOutcome({ kind: 'ok', text: done });
    } catch (err) {
      setOutcome({ kind: 'error', text: (err as Error).message });
    }
    await onChanged();
  };

  const confirm = async () => {
    const question = asking;
    setAsking(null);
    if (question?.kind === 'deny') {
      await run(
        'settings.pairing.deny',
        { code: question.request.code },
        t('channels.pairing.denied', { code: question.request.code }),
      );
    } else if (question?.kind === 'revoke') {
      const { sender } = question;
      await run(
        'settings.pairing.revoke',
        { channel: sender.channel, sender_id: sender.sender_id },
        t('channels.pairing.revoked', { sender: who(sender), channel: channelName(sender.channel) }),
      );
    }
  };

  return (
    <>
      {outcome && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
      <h4 className="channels-subhead">{t('channels.pairing.pending')}</h4>
      {pairing.requests.length === 0 ? (
        <p className="muted">{t('channels.pairing.noPending')}</p>
      ) : (
        <ul className="channels-rows" data-testid="pairing-requests">
          {pairing.requests.map((request) => {
            const minutes = Math.max(1, Math.ceil((request.expires_in_seconds ?? 0) / 60));
            const label = t('channels.pairing.requestLabel', {
              sender: request.sender_id,
              channel: channelName(request.channel),
            });
            return (
              <li key={request.code} className="channels-row" aria-label={label}>
                <div className="channels-row-main">
                  <code className="channels-code">{request.code}</code>
                  <span>{label}</span>
                  {request.expires_in_seconds != null && (
                    <span className="muted">{t('channels.pairing.expiresIn', { minutes })}</span>
                  )}
                </div>
                <div className="channels-row-actions">
                  <BusyButton
                    kind="primary"
                    onClick={() =>
                      run(
                        'settings.pairing.approve',
                        { code: request.code },
                        t('channels.pairing.approvedNow', {
                          sender: request.sender_id,
                          channel: channelName(request.channel),
                        }),
                      )
                    }
                  >
                    {tx('channels.pairing.approve', { who: hidden(request.sender_id) })}
                  </BusyButton>
                  <button
                    type="button"
                    className="button button-danger"
                    onClick={() => setAsking({ kind: 'deny', request })}
                  >
                    {tx('channels.pairing.deny', { who: hidden(request.sender_id) })}
                  </button>
                </div>
              </li>
            );
          })}
        </ul>
      )}
      <h4 className="channels-subhead">{t('channels.pairing.approved')}</h4>
      {approved.length === 0 ? (
        <p className="muted">{t('channels.pairing.noApproved')}</p>
      ) : (
        <ul className="channels-rows" data-testid="pairing-approved">
          {approved.map((sender) => {
            const label = t('channels.pairing.senderLabel', {
              sender: who(sender),
              channel: channelName(sender.channel),
            });
            return (
              <li key={`${sender.channel}:${sender.sender_id}`} className="channels-row" aria-label={label}>
                <div className="channels-row-main">
                  <span>{label}</span>
                  {sender.approved_at && (
                    <span className="muted">{t('channels.pairing.approvedAt', { when: ago(sender.approved_at) })}</span>
                  )}
                </div>
                <div className="channels-row-actions">
                  <button
                    type="button"
                    className="button button-danger"
                    onClick={() => setAsking({ kind: 'revoke', sender })}
                  >
                    {tx('channels.pairing.revoke', { who: hidden(who(sender)) })}
                  </button>
                </div>
              </li>
            );
          })}
        </ul>
      )}
      <ConfirmDialog
        open={asking !== null}
        danger
        title={
          asking?.kind === 'deny'
            ? t('channels.pairing.denyTitle', { code: asking.request.code })
            : asking?.kind === 'revoke'
              ? t('channels.pairing.revokeTitle', {
                  sender: who(asking.sender),
                  channel: channelName(asking.sender.channel),
                })
              : ''
        }
        confirmLabel={
          asking?.kind === 'revoke' ? t('channels.pairing.revokeConfirm') : t('channels.pairing.denyConfirm')
        }
        onConfirm={() => void confirm()}
        onCancel={() => setAsking(null)}
      >
        <p>{asking?.kind === 'revoke' ? t('channels.pairing.revokeBody') : t('channels.pairing.denyBody')}</p>
      </ConfirmDialog>
    </>
  );
}
