/**
 * The providers: each is a disclosure with its state (ready, not set up, signed in) and its form: an API key (never
 * shown back: the gateway gives a hint) and base URL, or for a subscription provider the sign-in (OAuthSignIn).
 */
import { useState } from 'react';
import { BusyButton, Notice, SecretField, Section, TextField } from '../controls.js';
import { usePageText } from '../text.js';
import type { SectionProps } from './ModelsPage.js';
import { modelsMessages } from './messages.js';
import { OAuthSignIn } from './OAuthSignIn.js';
import type { ModelSettings, ProviderRow } from './types.js';

function KeyForm({ row, apply }: { row: ProviderRow; apply: SectionProps['apply'] }) {
  const { t } = usePageText(modelsMessages);
  const [key, setKey] = useState('');
  const [base, setBase] = useState(row.api_base ?? '');
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const save = async () => {
    setNotice(null);
    const payload: Record<string, unknown> = { provider: row.name };
    if (key.trim()) payload.api_key = key.trim();
    if (base.trim() !== (row.api_base ?? '')) payload.api_base = base.trim();
    await apply('settings.provider.update', payload);
    setKey(''); // the box never holds a saved key
    setNotice({ kind: 'ok', text: t('models.providerSaved', { provider: row.label }) });
  };
  return (
    <div className="models-provider-form">
      <SecretField
        label={t('models.apiKey')}
        value={key}
        onChange={setKey}
        savedHint={row.api_key_hint}
        help={row.api_key_hint ? undefined : t('models.apiKeyHelp')}
      />
      <TextField
        label={t('models.apiBase')}
        type="url"
        value={base}
        onChange={setBase}
        placeholder={row.default_api_base ?? undefined}
        help={
          row.default_api_base ? t('models.apiBaseDefault', { url: row.default_api_base }) : t('models.apiBaseHelp')
        }
      />
      <BusyButton kind="primary" onClick={save} onError={(text) => setNotice({ kind: 'error', text })}>
        {t('models.saveProvider', { provider: row.label })}
      </BusyButton>
      {notice && <Notice kind={notice.kind}>{notice.text}</Notice>}
    </div>
  );
}

/** A user-named OpenAI-compatible endpoint (`settings.provider.create`: `providers.custom-<name>`). */
function CustomEndpointForm({ apply }: { apply: SectionProps['apply'] }) {
  const { t } = usePageText(modelsMessages);
  const [name, setName] = useState('');
  const [base, setBase] = useState('');
  const [key, setKey] = useState('');
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const add = async () => {
    setNotice(null);
    if (!name.trim() || !base.trim()) throw new Error(t('models.custom.required'));
    await apply('settings.provider.create', {
      name: name.trim(),
      api_base: base.trim(),
      ...(key.trim() ? { api_key: key.trim() } : {}),
    });
    setNotice({ kind: 'ok', text: t('models.custom.added', { name: name.trim() }) });
    setName('');
    setBase('');
    setKey('');
  };
  return (
    <details className="models-provider models-custom">
      <summary>
        <span className="models-provider-name">{t('models.custom.title')}</span>
      </summary>
      <div className="models-provider-form">
        <p className="muted models-intro">{t('models.custom.help')}</p>
        <TextField label={t('models.custom.name')} value={name} onChange={setName} />
        <TextField label={t('models.apiBase')} type="url" value={base} onChange={setBase} />
        <SecretField label={t('models.apiKey')} value={key} onChange={setKey} help={t('models.apiKeyHelp')} />
        <BusyButton kind="primary" onClick={add} onError={(text) => setNotice({ kind: 'error', text })}>
          {t('models.custom.add')}
        </BusyButton>
        {notice && <Notice kind={notice.kind}>{notice.text}</Notice>}
      </div>
    </details>
  );
}

function ProviderItem({
  row,
  client,
  apply,
  onSettings,
}: { row: ProviderRow; onSettings(settings: ModelSettings): void } & Pick<SectionProps, 'client' | 'apply'>) {
  const { t } = usePageText(modelsMessages);
  const oauth = row.auth_type === 'oauth';
  const state = row.configured
    ? oauth
      ? row.oauth_account
        ? t('models.status.signedInAs', { account: row.oauth_account })
        : t('models.status.signedIn')
      : t('models.status.ready')
    : t('models.status.notSet');
  return (
    <li>
      <details className="models-provider" data-provider={row.name}>
        <summary>
          <span className="models-provider-name">{row.label}</span>
          <span className={`models-badge${row.configured ? ' is-ready' : ''}`}>{state}</span>
        </summary>
        {oauth ? (
          <OAuthSignIn row={row} client={client} apply={apply} onSettings={onSettings} />
        ) : (
          <KeyForm row={row} apply={apply} />
        )}
      </details>
    </li>
  );
}

export function ProvidersSection({
  settings,
  client,
  apply,
  onSettings,
}: SectionProps & { onSettings(settings: ModelSettings): void }) {
  const { t } = usePageText(modelsMessages);
  const [query, setQuery] = useState('');
  const wanted = query.trim().toLowerCase();
  const matches = (p: ProviderRow) =>
    !wanted || p.label.toLowerCase().includes(wanted) || p.name.toLowerCase().includes(wanted);
  // Those set up first, each group in the gateway's order, as the page opened: a row does not jump away from the
  // user when its key is saved (a new endpoint goes first).
  const [firstOrder] = useState(() =>
    [...settings.providers.filter((p) => p.configured), ...settings.providers.filter((p) => !p.configured)].map(
      (p) => p.name,
    ),
  );
  const rank = (p: ProviderRow) => firstOrder.indexOf(p.name);
  const rows = [...settings.providers].sort((a, b) => rank(a) - rank(b)).filter(matches);
  return (
    <Section title={t('models.providers.title')}>
      <p className="muted models-intro">{t('models.providers.intro')}</p>
      <div className="models-find">
        <TextField label={t('models.providers.find')} value={query} onChange={setQuery} />
      </div>
      {rows.length === 0 && <p className="muted">{t('models.providers.noMatch', { query: query.trim() })}</p>}
      <ul className="models-providers">
        {rows.map((row) => (
          <ProviderItem key={row.name} row={row} client={client} apply={apply} onSettings={onSettings} />
        ))}
      </ul>
      <CustomEndpointForm apply={apply} />
    </Section>
  );
}
