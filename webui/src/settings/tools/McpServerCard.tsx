/** One MCP server: its state, its tools (a switch each), a switch for the whole server, test and remove. */
import { useState } from 'react';
import { BusyButton, ConfirmDialog, Toggle } from '../controls.js';
import { usePageText } from '../text.js';
import { toolsMessages } from './messages.js';
import type { McpRow } from './types.js';

type Tone = 'ok' | 'bad' | 'idle';

export function McpServerCard({
  row,
  offered,
  onTest,
  onTools,
  onRemove,
  onError,
}: {
  row: McpRow;
  /** Every tool seen on this page or listed by a test (whatever is switched on). */
  offered: string[] | undefined;
  onTest(): Promise<void>;
  onTools(enabled: string[]): Promise<void>;
  onRemove(): Promise<void>;
  onError(message: string): void;
}) {
  const { t } = usePageText(toolsMessages);
  const [removing, setRemoving] = useState(false);
  const [busy, setBusy] = useState(false);
  const all = row.enabled_tools.includes('*');
  const serverOn = all || row.enabled_tools.length > 0;
  const names = [...new Set([...(offered ?? []), ...row.tool_names])].sort();
  const isOn = (tool: string) => all || row.enabled_tools.includes(tool);

  const state: { text: string; tone: Tone } =
    row.status === 'missing_dependency'
      ? { text: t('tools.mcp.stateMissing'), tone: 'bad' }
      : row.runtime_status === 'connected'
        ? { text: t('tools.mcp.stateConnected'), tone: 'ok' }
        : row.runtime_status === 'failed'
          ? { text: t('tools.mcp.stateFailed'), tone: 'bad' }
          : row.runtime_status === 'connecting'
            ? { text: t('tools.mcp.stateConnecting'), tone: 'idle' }
            : { text: t('tools.mcp.stateIdle'), tone: 'idle' };

  const change = (enabled: string[]) => {
    setBusy(true);
    onTools(enabled)
      .catch((error: Error) => onError(error.message))
      .finally(() => setBusy(false));
  };
  const toggleTool = (tool: string, on: boolean) => {
    const current = all ? names : row.enabled_tools;
    const next = on ? [...new Set([...current, tool])] : current.filter((name) => name !== tool);
    // Every tool on again: `*` (which also brings back the server's resources and prompts).
    change(names.length > 0 && names.every((name) => next.includes(name)) ? ['*'] : next);
  };

  return (
    <li className="tools-server" data-testid={`mcp-server-${row.name}`}>
      <div className="tools-server-head">
        <h4>{row.name}</h4>
        <span className={`tools-state tools-state-${state.tone}`}>{state.text}</span>
        <span className="tools-transport">{row.transport}</span>
      </div>
      <p className="tools-summary">
        <code>{row.connection_summary}</code>
      </p>
      {row.error && <p className="field-error">{row.error}</p>}
      <Toggle
        label={t('tools.mcp.use', { name: row.name })}
        checked={serverOn}
        disabled={busy}
        onChange={(on) => change(on ? ['*'] : [])}
      />
      {names.length > 0 ? (
        <fieldset className="tools-tool-list" disabled={busy || !serverOn}>
          <legend>{t('tools.mcp.tools', { count: names.length })}</legend>
          {names.map((tool) => (
            <Toggle key={tool} label={tool} checked={serverOn && isOn(tool)} onChange={(on) => toggleTool(tool, on)} />
          ))}
        </fieldset>
      ) : (
        <p className="muted tools-hint">{t('tools.mcp.toolsHint')}</p>
      )}
      <div className="tools-actions">
        <BusyButton onClick={onTest} onError={onError} label={t('tools.mcp.testLabel', { name: row.name })}>
          {t('tools.mcp.test')}
        </BusyButton>
        <button
          type="button"
          className="button button-danger"
          aria-label={t('tools.mcp.removeLabel', { name: row.name })}
          onClick={() => setRemoving(true)}
        >
          {t('tools.mcp.remove')}
        </button>
      </div>
      <ConfirmDialog
        open={removing}
        title={t('tools.mcp.removeTitle', { name: row.name })}
        confirmLabel={t('tools.mcp.remove')}
        danger
        onCancel={() => setRemoving(false)}
        onConfirm={() => {
          setRemoving(false);
          onRemove().catch((error: Error) => onError(error.message));
        }}
      >
        <p>{t('tools.mcp.removeBody')}</p>
      </ConfirmDialog>
    </li>
  );
}
