/**
 * Settings: the list of sections (a column on a desktop, a scrolling row of tabs on a phone) and the chosen page.
 * Each section is a link (`#settings/<page>`), so the back button, a reload and a bookmark all land on it.
 */
import { useEffect, useRef } from 'react';
import { type Translator, useI18n } from '../i18n/react.js';
import type { SettingsClient } from './client.js';
import { SETTINGS_PAGES } from './pages.js';
import { type SettingsPageId, settingsHash } from './route.js';
import './settings.css';

function pageLabel(t: Translator['t'], id: SettingsPageId): string {
  const labels: Record<SettingsPageId, string> = {
    models: t('settings.nav.models'),
    channels: t('settings.nav.channels'),
    tools: t('settings.nav.tools'),
    automations: t('settings.nav.automations'),
    skills: t('settings.nav.skills'),
    memory: t('settings.nav.memory'),
    usage: t('settings.nav.usage'),
  };
  return labels[id];
}

export interface SettingsViewProps {
  client: SettingsClient;
  chatId: string | null;
  /** The page the address names; the first page when it names none (or one this build does not have). */
  page: SettingsPageId | null;
  onBack(): void;
}

export default function SettingsView({ client, chatId, page, onBack }: SettingsViewProps) {
  const { t } = useI18n();
  const current = SETTINGS_PAGES.find((entry) => entry.id === page) ?? SETTINGS_PAGES[0];
  const heading = useRef<HTMLElement>(null);
  // A new page: the reader's focus moves to it (a screen reader then reads its title), not left on the old link.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs when the page changes.
  useEffect(() => heading.current?.focus(), [page]);
  // On a phone the sections are a row of tabs wider than the screen: the current one is scrolled into sight.
  const nav = useRef<HTMLElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs when the page changes.
  useEffect(() => {
    nav.current?.querySelector('[aria-current="page"]')?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }, [page]);
  if (!current) return null;
  const Page = current.component;
  return (
    <div className="settings" data-testid="settings">
      <nav ref={nav} className="settings-nav" aria-label={t('settings.sections')}>
        <button type="button" className="link-button settings-back" onClick={onBack}>
          ← {t('settings.back')}
        </button>
        <ul>
          {SETTINGS_PAGES.map((entry) => (
            <li key={entry.id}>
              <a href={settingsHash(entry.id)} aria-current={entry.id === current.id ? 'page' : undefined}>
                {pageLabel(t, entry.id)}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <section ref={heading} className="settings-content" tabIndex={-1} aria-label={pageLabel(t, current.id)}>
        <Page client={client} chatId={chatId} />
      </section>
    </div>
  );
}
