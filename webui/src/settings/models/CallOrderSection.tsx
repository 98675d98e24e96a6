/**
 * The call order (`agents.defaults.modelPreset` then `fallbackModels`): the first preset answers, the next ones are
 * tried in turn when it fails. Editable when every entry is a named preset; otherwise the gateway converts them.
 */
import { useEffect, useState } from 'react';
import { BusyButton, Notice, Section } from '../controls.js';
import { usePageText } from '../text.js';
import { SelectField } from './fields.js';
import type { SectionProps } from './ModelsPage.js';
import { modelsMessages } from './messages.js';

function move<T>(list: readonly T[], from: number, to: number): T[] {
  const next = [...list];
  const [item] = next.splice(from, 1);
  if (item !== undefined) next.splice(to, 0, item);
  return next;
}

export function CallOrderSection({ settings, apply }: SectionProps) {
  const { t } = usePageText(modelsMessages);
  const saved = settings.model_call_order;
  const [order, setOrder] = useState<string[]>(saved);
  const [adding, setAdding] = useState('');
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const savedKey = saved.join('\n');
  // biome-ignore lint/correctness/useExhaustiveDependencies: the saved order, compared by value.
  useEffect(() => setOrder(saved), [savedKey]);
  const presets = settings.model_presets.filter((preset) => !preset.is_default).map((preset) => preset.name);
  const left = presets.filter((name) => !order.includes(name));
  const choice = left.includes(adding) ? adding : (left[0] ?? '');
  const onError = (text: string) => setNotice({ kind: 'error', text });
  const save = async () => {
    setNotice(null);
    await apply('settings.model_call_order.update', { order });
    setNotice({ kind: 'ok', text: t('models.order.saved') });
  };
  const convert = async () => {
    setNotice(null);
    await apply('settings.model_configuration.migrate', {});
  };
  if (!settings.model_call_order_editable) {
    return (
      <Section title={t('models.order.title')}>
        <p className="muted models-intro">{t('models.order.notEditable')}</p>
        <BusyButton onClick={convert} onError={onError}>
          {t('models.order.convert')}
        </BusyButton>
        {notice && <Notice kind={notice.kind}>{notice.text}</Notice>}
      </Section>
    );
  }
  return (
    <Section title={t('models.order.title')}>
      <p className="muted models-intro">{t('models.order.intro')}</p>
      <ol className="models-rows models-order" data-testid="models-order">
        {order.map((name, index) => (
          <li key={name} className="models-row">
            <div className="models-row-text">
              <strong>{name}</strong>
              <span className="muted">{index === 0 ? t('models.order.first') : t('models.order.fallback')}</span>
            </div>
            <div className="models-row-actions">
              <button
                type="button"
                className="button"
                aria-label={t('models.order.up', { name })}
                disabled={index === 0}
                onClick={() => setOrder(move(order, index, index - 1))}
              >
                ↑
              </button>
              <button
                type="button"
                className="button"
                aria-label={t('models.order.down', { name })}
                disabled={index === order.length - 1}
                onClick={() => setOrder(move(order, index, index + 1))}
              >
                ↓
              </button>
              <button
                type="button"
                className="button"
                aria-label={t('models.order.remove', { name })}
                disabled={order.length === 1}
                onClick={() => setOrder(order.filter((entry) => entry !== name))}
              >
                ✕
              </button>
            </div>
          </li>
        ))}
      </ol>
      {left.length > 0 && (
        <div className="models-inline models-add">
          <SelectField
            label={t('models.order.add')}
            value={choice}
            onChange={setAdding}
            options={left.map((name) => ({ value: name, label: name }))}
          />
          <button type="button" className="button" onClick={() => setOrder([...order, choice])}>
            {t('models.order.addButton')}
          </button>
        </div>
      )}
      <BusyButton kind="primary" onClick={save} onError={onError} disabled={order.join('\n') === savedKey}>
        {t('models.order.save')}
      </BusyButton>
      {notice && <Notice kind={notice.kind}>{notice.text}</Notice>}
    </Section>
  );
}
