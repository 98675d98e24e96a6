/**
 * Connect for a channel whose login shows a code to scan (`qr_connect`: WhatsApp, Signal…): the gateway runs the
 * channel's login (`settings.channel.connect.start`), this draws its code and polls until the login ends; the code
 * is redrawn when the platform rotates it. Leaving the page does not cancel a login; Cancel does.
 */
import QRCode from 'qrcode';
import { useEffect, useState } from 'react';
import type { SettingsClient } from '../client.js';
import { BusyButton, Notice } from '../controls.js';
import { usePageText } from '../text.js';
import { channelsMessages } from './messages.js';
import type { ChannelFeature } from './types.js';

interface ConnectPayload {
  session_id: string;
  status: 'pending' | 'succeeded' | 'expired' | 'cancelled' | 'failed' | string;
  qr_url?: string;
  message?: string;
  interval_ms?: number;
}

export function QrConnect({
  feature,
  client,
  onChanged,
}: {
  feature: ChannelFeature;
  client: SettingsClient;
  onChanged(): Promise<void>;
}) {
  const { t, tx, locale } = usePageText(channelsMessages);
  const serverLang = locale === 'en' ? undefined : 'en';
  const [session, setSession] = useState<ConnectPayload | null>(null);
  const [image, setImage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const pending = session?.status === 'pending';
  const code = pending ? session?.qr_url : undefined;

  useEffect(() => {
    if (!code) {
      setImage(null);
      return;
    }
    let current = true;
    QRCode.toDataURL(code, { errorCorrectionLevel: 'L', margin: 2, width: 240 }).then(
      (url) => current && setImage(url),
      () => current && setImage(null),
    );
    return () => {
      current = false;
    };
  }, [code]);

  // Poll while the login waits; a finished login refreshes the catalog (the channel may be set up now).
  useEffect(() => {
    if (session?.status !== 'pending') return;
    const timer = setTimeout(() => {
      client
        .act<ConnectPayload>('settings.channel.connect.poll', { channel: feature.name, session_id: session.session_id })
        .then(
          async (next) => {
            setSession(next);
            if (next.status === 'succeeded') await onChanged();
          },
          (err: Error) => {
            setSession(null);
            setError(err.message);
          },
        );
    }, session.interval_ms ?? 1500);
    return () => clearTimeout(timer);
  }, [session, client, feature.name, onChanged]);

  const start = async () => {
    setError(null);
    setSession(null);
    const first = await client.act<ConnectPayload>('settings.channel.connect.start', { channel: feature.name });
    setSession(first);
    if (first.status === 'succeeded') await onChanged();
  };

  const cancel = async () => {
    if (!session) return;
    setSession(
      await client.act<ConnectPayload>('settings.channel.connect.cancel', {
        channel: feature.name,
        session_id: session.session_id,
      }),
    );
  };

  const hiddenName = <span className="sr-only"> {feature.display_name} </span>;
  const ended = session && !pending;
  return (
    <div className="channels-connect" data-testid={`channel-connect-${feature.name}`}>
      {pending ? (
        <div className="channels-qr">
          <p>{t('channels.scan', { name: feature.display_name })}</p>
          {image ? (
            <img src={image} alt={t('channels.qrAlt', { name: feature.display_name })} width={240} height={240} />
          ) : (
            <p className="field-help">{t('channels.waitingScan')}</p>
          )}
          {session?.message && (
            <p className="field-help channels-connect-message" lang={serverLang}>
              {session.message}
            </p>
          )}
          <BusyButton onClick={cancel} onError={setError}>
            {t('channels.connectCancel')}
          </BusyButton>
        </div>
      ) : (
        <BusyButton onClick={start} onError={setError}>
          {ended ? t('channels.connectAgain') : tx('channels.connect', { name: hiddenName })}
        </BusyButton>
      )}
      {ended && session.status === 'succeeded' && (
        <Notice kind="ok">
          {t('channels.connected')}
          {session.message && <span lang={serverLang}> {session.message}</span>}
        </Notice>
      )}
      {ended && session.status !== 'succeeded' && session.message && (
        <Notice kind="error">
          <span lang={serverLang}>{session.message}</span>
        </Notice>
      )}
      {error && <Notice kind="error">{error}</Notice>}
    </div>
  );
}
