/** "Test": one tiny request to a preset (`settings.model.test`), then who answered and how fast, or why not. */
import { useState } from 'react';
import type { SettingsClient } from '../client.js';
import { BusyButton, Notice } from '../controls.js';
import { usePageText } from '../text.js';
import { modelsMessages } from './messages.js';
import type { ModelTest } from './types.js';

export function TestButton({ client, preset, label }: { client: SettingsClient; preset: string; label?: string }) {
  const { t, number } = usePageText(modelsMessages);
  const [result, setResult] = useState<ModelTest | null>(null);
  const [error, setError] = useState<string | null>(null);
  const run = async () => {
    setError(null);
    setResult(null);
    setResult(await client.act<ModelTest>('settings.model.test', { model_preset: preset }));
  };
  return (
    <div className="models-test">
      <BusyButton onClick={run} onError={setError} label={label}>
        {t('models.test')}
      </BusyButton>
      {error && <Notice kind="error">{error}</Notice>}
      {result?.ok && (
        <Notice kind="ok">
          {t('models.testOk', {
            provider: result.resolved_provider ?? '—',
            model: result.model,
            ms: number(result.latency_ms ?? 0),
          })}
        </Notice>
      )}
      {result && !result.ok && (
        <Notice kind="error">
          {t('models.testFailed', {
            provider: result.resolved_provider ?? '—',
            error: result.error?.message ?? result.error?.kind ?? '',
          })}
        </Notice>
      )}
    </div>
  );
}
