/**
 * Settings › Channels: every chat channel this build has (`GET /api/settings/nanobot-features`), each with its live
 * state, its switch and its setup form, and the pairing queue (`GET /api/settings/pairing`). Both are read again
 * every few seconds while the page is open, so a channel that starts, fails or gets a stranger's request shows it.
 */
import { useEffect, useRef } from 'react';
import { LoadedView, Notice, PageHeader, Section, useLoad } from '../controls.js';
import type { SettingsPageProps } from '../pages.js';
import { usePageText } from '../text.js';
import { ChannelCard } from './ChannelCard.js';
import { channelsMessages } from './messages.js';
import { PairingQueue } from './PairingQueue.js';
import type { FeaturesPayload, PairingPayload } from './types.js';
import './channels.css';

/** How often the page asks the gateway again (status and pairing requests change without the page doing anything). */
const REFRESH_MS = 3_000;

export function ChannelsPage({ client }: SettingsPageProps) {
  const { t, tx } = usePageText(channelsMessages);
  const features = useLoad(() => client.get<FeaturesPayload>('settings/nanobot-features'));
  const pairing = useLoad(() => client.get<PairingPayload>('settings/pairing'));
  const pairingSection = useRef<HTMLDivElement>(null);
  const { reload: reloadFeatures } = features;
  const { reload: reloadPairing } = pairing;
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState !== 'visible') return;
      void reloadFeatures();
      void reloadPairing();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [reloadFeatures, reloadPairing]);

  const channels = features.data?.features.filter((feature) => feature.type === 'channel') ?? [];
  const channelName = (name: string) => channels.find((feature) => feature.name === name)?.display_name ?? name;
  const waiting = pairing.data?.requests.length ?? 0;

  return (
    <>
      <PageHeader
        title={t('channels.title')}
        intro={tx('channels.intro', { command: <code>nanobot channels login</code> })}
      />
      {waiting > 0 && (
        <Notice kind="info">
          {t('channels.waiting', { count: waiting })}{' '}
          <button
            type="button"
            className="link-button"
            onClick={() => {
              pairingSection.current?.scrollIntoView({ block: 'start' });
              pairingSection.current?.focus();
            }}
          >
            {t('channels.review')}
          </button>
        </Notice>
      )}
      <Section title={t('channels.catalog')}>
        <LoadedView loaded={features}>
          {() => (
            <ul className="channels-list">
              {channels.map((feature) => (
                <li key={feature.name}>
                  <ChannelCard feature={feature} client={client} onChanged={reloadFeatures} />
                </li>
              ))}
            </ul>
          )}
        </LoadedView>
      </Section>
      <div ref={pairingSection} tabIndex={-1} className="channels-pairing-anchor">
        <Section title={t('channels.pairing.title')}>
          <p className="muted channels-pairing-intro">
            {tx('channels.pairing.intro', { command: <code>nanobot channels pair approve</code> })}
          </p>
          <LoadedView loaded={pairing}>
            {(data) => (
              <PairingQueue pairing={data} client={client} channelName={channelName} onChanged={reloadPairing} />
            )}
          </LoadedView>
        </Section>
      </div>
    </>
  );
}
