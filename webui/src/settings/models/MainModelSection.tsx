/**
 * The main model: the provider and model every chat uses. With a call order, that is its first preset (the change goes
 * to the preset, as nanobot's WebUI does); otherwise the defaults (`agents.defaults.provider`/`model`).
 */
import { useEffect, useState } from 'react';
import { BusyButton, Notice, Section } from '../controls.js';
import { usePageText } from '../text.js';
import { ModelField, providerOptions, SelectField } from './fields.js';
import type { SectionProps } from './ModelsPage.js';
import { modelsMessages } from './messages.js';
import { TestButton } from './TestButton.js';

export function MainModelSection({ settings, client, apply }: SectionProps) {
  const { t } = usePageText(modelsMessages);
  const active = settings.agent.model_preset;
  const presetInUse = active && active !== 'default' ? active : null;
  const base = settings.model_presets.find((preset) => (presetInUse ? preset.name === presetInUse : preset.is_default));
  const savedProvider = base?.provider ?? settings.agent.provider;
  const savedModel = base?.model ?? settings.agent.model;
  const [provider, setProvider] = useState(savedProvider);
  const [model, setModel] = useState(savedModel);
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  useEffect(() => {
    setProvider(savedProvider);
    setModel(savedModel);
  }, [savedProvider, savedModel]);
  const save = async () => {
    setNotice(null);
    if (!model.trim()) throw new Error(t('models.modelRequired'));
    const changes = { provider, model: model.trim() };
    await (presetInUse
      ? apply('settings.model_configuration.update', { name: presetInUse, ...changes })
      : apply('settings.agent.update', changes));
    setNotice({ kind: 'ok', text: t('models.saved') });
  };
  return (
    <Section title={t('models.main.title')}>
      <p className="muted models-intro">{t('models.main.intro')}</p>
      {presetInUse && <Notice kind="info">{t('models.presetActive', { name: presetInUse })}</Notice>}
      <dl className="facts models-facts" data-testid="models-current">
        <dt>{t('models.inUse')}</dt>
        <dd>{settings.agent.model}</dd>
        <dt>{t('models.servedBy')}</dt>
        <dd>{settings.agent.resolved_provider ?? t('models.noProvider')}</dd>
      </dl>
      <div className="models-grid">
        <SelectField
          label={t('models.provider')}
          value={provider}
          onChange={setProvider}
          options={providerOptions(settings.providers, provider, t('models.providerAuto'))}
        />
        <ModelField client={client} provider={provider} value={model} onChange={setModel} />
      </div>
      <div className="models-actions">
        <BusyButton kind="primary" onClick={save} onError={(text) => setNotice({ kind: 'error', text })}>
          {t('models.save')}
        </BusyButton>
        <TestButton client={client} preset={presetInUse ?? 'default'} />
      </div>
      {notice && <Notice kind={notice.kind}>{notice.text}</Notice>}
    </Section>
  );
}
