/** Adding an MCP server by its command (stdio) or its URL (HTTP), as `settings.mcp.custom` takes it. */
import { useId, useState } from 'react';
import { BusyButton, Notice, TextField } from '../controls.js';
import { usePageText } from '../text.js';
import { LinesField, linesOf } from './fields.js';
import { toolsMessages } from './messages.js';

type Kind = 'command' | 'url';

/** `NAME=value` (env) or `Name: value` (headers) lines as a map; the number of the first bad line otherwise. */
function pairs(text: string, separator: '=' | ':'): Record<string, string> | number {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    if (!line) continue;
    const at = line.indexOf(separator);
    if (at <= 0) return index + 1;
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

export function McpAddForm({ onAdd }: { onAdd(payload: Record<string, unknown>): Promise<void> }) {
  const { t } = usePageText(toolsMessages);
  const group = useId();
  const [kind, setKind] = useState<Kind>('command');
  const [name, setName] = useState('');
  const [command, setCommand] = useState('');
  const [args, setArgs] = useState('');
  const [env, setEnv] = useState('');
  const [url, setUrl] = useState('');
  const [headers, setHeaders] = useState('');
  const [error, setError] = useState<string | null>(null);

  const add = async () => {
    setError(null);
    const map = kind === 'command' ? pairs(env, '=') : pairs(headers, ':');
    if (typeof map === 'number') {
      setError(kind === 'command' ? t('tools.mcp.badEnv', { line: map }) : t('tools.mcp.badHeader', { line: map }));
      return;
    }
    const payload: Record<string, unknown> =
      kind === 'command'
        ? { name: name.trim(), type: 'stdio', command: command.trim(), args: linesOf(args), env: map }
        : { name: name.trim(), url: url.trim(), headers: map };
    await onAdd(payload);
    setName('');
    setCommand('');
    setArgs('');
    setEnv('');
    setUrl('');
    setHeaders('');
  };

  return (
    <div className="tools-add">
      <h4>{t('tools.mcp.add')}</h4>
      <fieldset className="tools-kind">
        <legend>{t('tools.mcp.kind')}</legend>
        {(['command', 'url'] as const).map((value) => (
          <label key={value}>
            <input type="radio" name={group} value={value} checked={kind === value} onChange={() => setKind(value)} />{' '}
            {value === 'command' ? t('tools.mcp.kindCommand') : t('tools.mcp.kindUrl')}
          </label>
        ))}
      </fieldset>
      <TextField label={t('tools.mcp.name')} value={name} onChange={setName} help={t('tools.mcp.nameHelp')} />
      {kind === 'command' ? (
        <>
          <TextField label={t('tools.mcp.command')} value={command} onChange={setCommand} />
          <LinesField label={t('tools.mcp.args')} value={args} onChange={setArgs} help={t('tools.mcp.argsHelp')} />
          <LinesField label={t('tools.mcp.env')} value={env} onChange={setEnv} help={t('tools.mcp.envHelp')} rows={2} />
        </>
      ) : (
        <>
          <TextField label={t('tools.mcp.url')} type="url" value={url} onChange={setUrl} />
          <LinesField
            label={t('tools.mcp.headers')}
            value={headers}
            onChange={setHeaders}
            help={t('tools.mcp.headersHelp')}
            rows={2}
          />
        </>
      )}
      {error && <Notice kind="error">{error}</Notice>}
      <BusyButton kind="primary" onClick={add} onError={setError}>
        {t('tools.mcp.addButton')}
      </BusyButton>
    </div>
  );
}
