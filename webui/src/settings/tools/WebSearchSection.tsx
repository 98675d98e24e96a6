/** Web search: the provider web_search uses and its key or base URL (`settings.web_search.update`). */
import { useState } from 'react';
import type { SettingsClient } from '../client.js';
import { BusyButton, Notice, SecretField, Section, TextField } from '../controls.js';
import { usePageText } from '../text.js';
import { SelectField } from './fields.js';
import { toolsMessages } from './messages.js';
import type { ToolSettings } from './types.js';

export function WebSearchSection({
  client,
  settings,
  onSaved,
}: {
  client: SettingsClient;
  settings: ToolSettings;
  onSaved(next: ToolSettings): void;
}) {
  const { t } = usePageText(toolsMessages);
  const saved = settings.web_search;
  const [provider, setProvider] = useState(saved.provider);
  const [apiKey, setApiKey] = useState('');
  const [baseUrl, setBaseUrl] = useState(saved.base_url ?? '');
  const [maxResults, setMaxResults] = useState(String(saved.max_results));
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const chosen = saved.providers.find((entry) => entry.name === provider);
  const credential = chosen?.credential ?? 'none';
  const hint = provider === saved.provider ? saved.api_key_hint : null;

  const save = async () => {
    const payload: Record<string, unknown> = { provider, max_results: Number(maxResults) };
    if (credential === 'api_key' && apiKey.trim()) payload.api_key = apiKey.trim();
    if (credential === 'base_url' && baseUrl.trim()) payload.base_url = baseUrl.trim();
    const next = await client.act<ToolSettings>('settings.web_search.update', payload);
    setApiKey('');
    setStatus({ ok: true, text: t('tools.saved') });
    onSaved(next);
  };

  return (
    <Section title={t('tools.search.title')}>
      <div className="tools-grid">
        <SelectField
          label={t('tools.search.provider')}
          value={provider}
          options={saved.providers.map((entry) => ({ value: entry.name, label: entry.label }))}
          onChange={(value) => {
            setProvider(value);
            setStatus(null);
          }}
          help={credential === 'none' ? t('tools.search.keyless') : undefined}
        />
        <TextField label={t('tools.search.maxResults')} type="number" value={maxResults} onChange={setMaxResults} />
      </div>
      {credential === 'api_key' && (
        <SecretField
          label={t('tools.search.apiKey')}
          value={apiKey}
          onChange={setApiKey}
          savedHint={hint}
          help={hint ? undefined : t('tools.search.apiKeyHelp')}
        />
      )}
      {credential === 'base_url' && (
        <TextField
          label={t('tools.search.baseUrl')}
          type="url"
          value={baseUrl}
          onChange={setBaseUrl}
          help={t('tools.search.baseUrlHelp')}
        />
      )}
      {status && <Notice kind={status.ok ? 'ok' : 'error'}>{status.text}</Notice>}
      <BusyButton kind="primary" onClick={save} onError={(text) => setStatus({ ok: false, text })}>
        {t('tools.search.save')}
      </BusyButton>
    </Section>
  );
}
