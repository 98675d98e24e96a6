/**
 * Settings › Models: the model every chat uses (and a test of it), the providers with their keys and sign-ins, the
 * model presets and the order they are tried in. Reads `GET /api/settings`; each change is a settings action whose
 * answer is the settings as they now are, so the page always shows what config.json says.
 */
import { useCallback, useEffect, useState } from 'react';
import { LoadedView, PageHeader, useLoad } from '../controls.js';
import type { SettingsPageProps } from '../pages.js';
import { usePageText } from '../text.js';
import { CallOrderSection } from './CallOrderSection.js';
import { MainModelSection } from './MainModelSection.js';
import { modelsMessages } from './messages.js';
import { PresetsSection } from './PresetsSection.js';
import { ProvidersSection } from './ProvidersSection.js';
import type { ModelSettings } from './types.js';
import './models.css';

/** What each section gets: the settings, the client, and `apply` to run an action and show its answer. */
export interface SectionProps {
  settings: ModelSettings;
  client: SettingsPageProps['client'];
  apply(action: string, payload: Record<string, unknown>): Promise<ModelSettings>;
}

export function ModelsPage({ client }: SettingsPageProps) {
  const { t } = usePageText(modelsMessages);
  const loaded = useLoad(() => client.get<ModelSettings>('settings'));
  const [settings, setSettings] = useState<ModelSettings | null>(null);
  useEffect(() => {
    if (loaded.data) setSettings(loaded.data);
  }, [loaded.data]);
  const apply = useCallback(
    async (action: string, payload: Record<string, unknown>) => {
      const next = await client.act<ModelSettings>(action, payload);
      setSettings(next);
      return next;
    },
    [client],
  );
  return (
    <>
      <PageHeader title={t('models.title')} intro={t('models.intro')} />
      <LoadedView loaded={loaded}>
        {(first) => {
          const current = settings ?? first;
          const props: SectionProps = { settings: current, client, apply };
          return (
            <div className="models-page">
              {current.requires_restart && <p className="notice">{t('models.restart')}</p>}
              <MainModelSection {...props} />
              <ProvidersSection {...props} onSettings={setSettings} />
              <PresetsSection {...props} />
              <CallOrderSection {...props} />
            </div>
          );
        }}
      </LoadedView>
    </>
  );
}
