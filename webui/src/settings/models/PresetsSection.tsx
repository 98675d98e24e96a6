/** Model presets (`modelPresets`): named model + provider pairs the call order and chats can use; add, test, delete. */
import { useState } from 'react';
import { BusyButton, ConfirmDialog, Notice, Section, TextField } from '../controls.js';
import { usePageText } from '../text.js';
import { ModelField, providerOptions, SelectField } from './fields.js';
import type { SectionProps } from './ModelsPage.js';
import { modelsMessages } from './messages.js';
import { TestButton } from './TestButton.js';

export function PresetsSection({ settings, client, apply }: SectionProps) {
  const { t } = usePageText(modelsMessages);
  const presets = settings.model_presets.filter((preset) => !preset.is_default);
  const [name, setName] = useState('');
  const [provider, setProvider] = useState('auto');
  const [model, setModel] = useState('');
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const label = (value: string) => settings.providers.find((p) => p.name === value)?.label ?? value;
  const create = async () => {
    setNotice(null);
    if (!name.trim() || !model.trim()) throw new Error(t('models.presets.required'));
    await apply('settings.model_configuration.create', { name: name.trim(), provider, model: model.trim() });
    setNotice({ kind: 'ok', text: t('models.presets.created', { name: name.trim() }) });
    setName('');
    setModel('');
  };
  const remove = async (preset: string) => {
    setDeleting(null);
    setNotice(null);
    try {
      await apply('settings.model_configuration.delete', { name: preset });
      setNotice({ kind: 'ok', text: t('models.presets.deleted', { name: preset }) });
    } catch (err) {
      setNotice({ kind: 'error', text: (err as Error).message });
    }
  };
  return (
    <Section title={t('models.presets.title')}>
      <p className="muted models-intro">{t('models.presets.intro')}</p>
      {presets.length === 0 ? (
        <p className="muted">{t('models.presets.none')}</p>
      ) : (
        <ul className="models-rows" data-testid="models-presets">
          {presets.map((preset) => (
            <li key={preset.name} className="models-row">
              <div className="models-row-text">
                <strong>{preset.name}</strong>
                <span className="muted">
                  {t('models.presets.summary', { model: preset.model, provider: label(preset.provider) })}
                </span>
              </div>
              <div className="models-row-actions">
                <TestButton
                  client={client}
                  preset={preset.name}
                  label={t('models.presets.testLabel', { name: preset.name })}
                />
                <button
                  type="button"
                  className="button button-danger"
                  aria-label={t('models.presets.deleteLabel', { name: preset.name })}
                  onClick={() => setDeleting(preset.name)}
                >
                  {t('models.presets.delete')}
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
      <h4 className="models-subhead">{t('models.presets.add')}</h4>
      <div className="models-grid models-grid-wide">
        <TextField label={t('models.presets.name')} value={name} onChange={setName} />
        <SelectField
          label={t('models.provider')}
          value={provider}
          onChange={setProvider}
          options={providerOptions(settings.providers, provider, t('models.providerAuto'))}
        />
        <ModelField client={client} provider={provider} value={model} onChange={setModel} />
      </div>
      <BusyButton kind="primary" onClick={create} onError={(text) => setNotice({ kind: 'error', text })}>
        {t('models.presets.create')}
      </BusyButton>
      {notice && <Notice kind={notice.kind}>{notice.text}</Notice>}
      <ConfirmDialog
        open={deleting !== null}
        title={t('models.presets.confirmDelete', { name: deleting ?? '' })}
        confirmLabel={t('models.presets.delete')}
        danger
        onConfirm={() => deleting && void remove(deleting)}
        onCancel={() => setDeleting(null)}
      />
    </Section>
  );
}
