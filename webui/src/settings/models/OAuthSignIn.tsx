/**
 * Signing in to a subscription provider from the browser, with the gateway's own flows (`settings.provider.oauth_*`):
 * GitHub Copilot shows the device code and GitHub's address, then asks the gateway until GitHub says approved;
 * OpenAI Codex opens the sign-in page, and the user pastes back the address the browser landed on.
 */
import { useEffect, useRef, useState } from 'react';
import { BusyButton, Notice, TextField } from '../controls.js';
import { usePageText } from '../text.js';
import type { SectionProps } from './ModelsPage.js';
import { modelsMessages } from './messages.js';
import { isSettings, type ModelSettings, type OAuthStart, type ProviderRow, webHref } from './types.js';

/** How often the page asks whether the device code was approved (the gateway never asks GitHub faster than allowed). */
const POLL_MS = 2000;

export function OAuthSignIn({
  row,
  client,
  apply,
  onSettings,
}: { row: ProviderRow; onSettings(settings: ModelSettings): void } & Pick<SectionProps, 'client' | 'apply'>) {
  const { t } = usePageText(modelsMessages);
  const [flow, setFlow] = useState<OAuthStart | null>(null);
  const [pasted, setPasted] = useState('');
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const finish = (settings: ModelSettings) => {
    setFlow(null);
    setPasted('');
    onSettings(settings);
    setNotice({ kind: 'ok', text: t('models.oauth.done', { provider: row.label }) });
  };
  const finishRef = useRef(finish);
  finishRef.current = finish;

  // The device flow: ask until approved, refused or expired; stops when the flow ends or the page closes.
  const deviceFlow = flow?.user_code ? flow : null;
  useEffect(() => {
    if (!deviceFlow) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const result = await client.act<unknown>('settings.provider.oauth_complete', {
          provider: deviceFlow.provider,
          flow_id: deviceFlow.flow_id,
        });
        if (stopped) return;
        if (isSettings(result)) return finishRef.current(result);
        timer = setTimeout(() => void poll(), POLL_MS);
      } catch (err) {
        if (stopped) return;
        setFlow(null);
        setNotice({ kind: 'error', text: (err as Error).message });
      }
    };
    timer = setTimeout(() => void poll(), POLL_MS);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [client, deviceFlow]);

  const start = async () => {
    setNotice(null);
    const result = await client.act<unknown>('settings.provider.oauth_login', { provider: row.name });
    if (isSettings(result)) return finish(result);
    setFlow(result as OAuthStart);
  };
  const complete = async () => {
    if (!flow) return;
    setNotice(null);
    const result = await client.act<unknown>('settings.provider.oauth_complete', {
      provider: flow.provider,
      flow_id: flow.flow_id,
      authorization_response: pasted.trim(),
    });
    if (isSettings(result)) finish(result);
  };
  const signOut = async () => {
    setNotice(null);
    await apply('settings.provider.oauth_logout', { provider: row.name });
    setNotice({ kind: 'ok', text: t('models.oauth.signedOut', { provider: row.label }) });
  };
  const onError = (text: string) => setNotice({ kind: 'error', text });

  return (
    <div className="models-provider-form">
      {!flow && (
        <div className="models-actions">
          {row.configured ? (
            <BusyButton onClick={signOut} onError={onError}>
              {t('models.oauth.signOut')}
            </BusyButton>
          ) : (
            <BusyButton kind="primary" onClick={start} onError={onError} disabled={row.oauth_login_supported === false}>
              {t('models.oauth.signIn', { provider: row.label })}
            </BusyButton>
          )}
        </div>
      )}
      {deviceFlow && (
        <div className="models-device" data-testid="oauth-device">
          <p>{t('models.oauth.deviceStep')}</p>
          <p className="models-device-code" data-testid="oauth-user-code">
            <span className="sr-only">{t('models.oauth.codeLabel')} </span>
            {deviceFlow.user_code}
          </p>
          <p>
            <a
              href={webHref(deviceFlow.verification_uri ?? deviceFlow.authorization_url)}
              target="_blank"
              rel="noreferrer"
            >
              {deviceFlow.verification_uri ?? deviceFlow.authorization_url}
            </a>
          </p>
          <p className="muted" aria-live="polite">
            {t('models.oauth.waiting')}
          </p>
          <button type="button" className="button" onClick={() => setFlow(null)}>
            {t('models.oauth.stop')}
          </button>
        </div>
      )}
      {flow && !deviceFlow && (
        <div className="models-device">
          <p>
            <a
              href={webHref(flow.authorization_url)}
              target="_blank"
              rel="noreferrer"
              className="button button-primary"
            >
              {t('models.oauth.openPage')}
            </a>
          </p>
          <TextField
            label={t('models.oauth.callback')}
            type="url"
            value={pasted}
            onChange={setPasted}
            help={t('models.oauth.pasteHelp')}
          />
          <div className="models-actions">
            <BusyButton kind="primary" onClick={complete} onError={onError} disabled={!pasted.trim()}>
              {t('models.oauth.finish')}
            </BusyButton>
            <button type="button" className="button" onClick={() => setFlow(null)}>
              {t('models.oauth.stop')}
            </button>
          </div>
        </div>
      )}
      {notice && <Notice kind={notice.kind}>{notice.text}</Notice>}
    </div>
  );
}
