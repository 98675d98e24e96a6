/** Page-only pieces of Settings › Models: a labelled select, and a model box that can list a provider's models. */
import { type ReactNode, useId, useState } from 'react';
import type { SettingsClient } from '../client.js';
import { usePageText } from '../text.js';
import { modelsMessages } from './messages.js';
import type { ProviderModels, ProviderRow } from './types.js';

export function SelectField({
  label,
  value,
  onChange,
  options,
  help,
}: {
  label: string;
  value: string;
  onChange(value: string): void;
  options: readonly { value: string; label: string }[];
  help?: ReactNode;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select
        id={id}
        value={value}
        onChange={(event) => onChange(event.target.value)}
        aria-describedby={help ? `${id}-help` : undefined}
      >
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      {help && (
        <p id={`${id}-help`} className="field-help">
          {help}
        </p>
      )}
    </div>
  );
}

/** The provider choices for a model: automatic, then each provider that is set up (and the current one, if not). */
export function providerOptions(
  providers: readonly ProviderRow[],
  current: string,
  autoLabel: string,
): { value: string; label: string }[] {
  const usable = providers.filter((p) => p.configured || p.name === current);
  const options = [{ value: 'auto', label: autoLabel }, ...usable.map((p) => ({ value: p.name, label: p.label }))];
  if (!options.some((option) => option.value === current)) options.push({ value: current, label: current });
  return options;
}

/**
 * A model id: typed, or picked from the provider's own list (`GET /api/settings/provider-models`), loaded when the
 * user asks for it (listing calls the provider).
 */
export function ModelField({
  client,
  provider,
  value,
  onChange,
}: {
  client: SettingsClient;
  provider: string;
  value: string;
  onChange(value: string): void;
}) {
  const { t } = usePageText(modelsMessages);
  const id = useId();
  const [listed, setListed] = useState<{ provider: string; result: ProviderModels } | null>(null);
  const [busy, setBusy] = useState(false);
  const list = listed?.provider === provider ? listed.result : null;
  const load = async () => {
    setBusy(true);
    try {
      const result = await client.get<ProviderModels>(
        `settings/provider-models?provider=${encodeURIComponent(provider)}`,
      );
      setListed({ provider, result });
    } catch (err) {
      setListed({ provider, result: { status: 'error', models: [], message: (err as Error).message } });
    } finally {
      setBusy(false);
    }
  };
  const status =
    list === null
      ? t('models.modelHelp')
      : list.status === 'available'
        ? t('models.modelsLoaded', { count: list.models.length })
        : (list.message ?? list.status);
  return (
    <div className="field">
      <label htmlFor={id}>{t('models.model')}</label>
      <div className="models-inline">
        <input
          id={id}
          type="text"
          value={value}
          list={list?.models.length ? `${id}-list` : undefined}
          onChange={(event) => onChange(event.target.value)}
          aria-describedby={`${id}-help`}
          autoComplete="off"
          spellCheck={false}
          required
        />
        {provider !== 'auto' && (
          <button
            type="button"
            className="button"
            onClick={() => void load()}
            disabled={busy}
            aria-busy={busy || undefined}
          >
            {t('models.loadModels')}
          </button>
        )}
      </div>
      {list && list.models.length > 0 && (
        <datalist id={`${id}-list`}>
          {list.models.map((model) => (
            <option key={model.id} value={model.id}>
              {model.label ?? model.id}
            </option>
          ))}
        </datalist>
      )}
      <p id={`${id}-help`} className="field-help" aria-live="polite">
        {status}
      </p>
    </div>
  );
}
