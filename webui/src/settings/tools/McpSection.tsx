/**
 * MCP servers (`GET /api/settings/mcp-presets`, `settings.mcp.*`): each configured server with its state and tools,
 * a test that connects and lists every tool it offers, a switch per tool and per server (`enabledTools`), remove,
 * and a form to add one by its command or its URL. Each change is applied by the gateway at once.
 */
import { useEffect, useState } from 'react';
import type { SettingsClient } from '../client.js';
import { LoadedView, Notice, Section, useLoad } from '../controls.js';
import { usePageText } from '../text.js';
import { McpAddForm } from './McpAddForm.js';
import { McpServerCard } from './McpServerCard.js';
import { toolsMessages } from './messages.js';
import type { McpPayload } from './types.js';

/** The tool names seen so far, per server, with those of `payload` added (a row lists only the tools that are on). */
function remembered(seen: Record<string, string[]>, payload: McpPayload): Record<string, string[]> {
  const next = { ...seen };
  for (const row of payload.presets) next[row.name] = [...new Set([...(seen[row.name] ?? []), ...row.tool_names])];
  return next;
}

export function McpSection({ client }: { client: SettingsClient }) {
  const { t } = usePageText(toolsMessages);
  const loaded = useLoad(() => client.get<McpPayload>('settings/mcp-presets'));
  const [latest, setLatest] = useState<McpPayload | null>(null);
  /** Every tool seen or listed by a test, per server: the switches stay for tools that are off (rows hide them). */
  const [offered, setOffered] = useState<Record<string, string[]>>({});
  const [notice, setNotice] = useState<{ ok: boolean; text: string } | null>(null);
  useEffect(() => {
    if (loaded.data) setOffered((seen) => remembered(seen, loaded.data as McpPayload));
  }, [loaded.data]);

  const run = async (action: string, payload: Record<string, unknown>) => {
    const next = await client.act<McpPayload>(action, payload);
    setLatest(next);
    setOffered((seen) => remembered(seen, next));
    return next;
  };
  const fail = (text: string) => setNotice({ ok: false, text });

  return (
    <Section title={t('tools.mcp.title')}>
      <LoadedView loaded={loaded}>
        {(first) => {
          const rows = (latest ?? first).presets;
          return (
            <>
              {notice && <Notice kind={notice.ok ? 'ok' : 'error'}>{notice.text}</Notice>}
              {rows.length === 0 ? (
                <p className="muted">{t('tools.mcp.none')}</p>
              ) : (
                <ul className="tools-servers" data-testid="mcp-servers">
                  {rows.map((row) => (
                    <McpServerCard
                      key={row.name}
                      row={row}
                      offered={offered[row.name]}
                      onError={fail}
                      onTest={async () => {
                        const next = await run('settings.mcp.test', { name: row.name });
                        const action = next.last_action;
                        if (action?.ok) {
                          setOffered((current) => ({ ...current, [row.name]: action.tool_names ?? [] }));
                          setNotice({
                            ok: true,
                            text: t('tools.mcp.tested', { name: row.name, count: action.tool_names?.length ?? 0 }),
                          });
                        } else {
                          setNotice({
                            ok: false,
                            text: t('tools.mcp.testFailed', { name: row.name, error: action?.error ?? '' }),
                          });
                        }
                      }}
                      onTools={async (enabled) => {
                        await run('settings.mcp.tools', { name: row.name, enabled_tools: enabled });
                        setNotice(null);
                      }}
                      onRemove={async () => {
                        await run('settings.mcp.remove', { name: row.name });
                        setNotice({ ok: true, text: t('tools.mcp.removed', { name: row.name }) });
                      }}
                    />
                  ))}
                </ul>
              )}
              <McpAddForm
                onAdd={async (payload) => {
                  await run('settings.mcp.custom', payload);
                  setNotice({ ok: true, text: t('tools.mcp.added', { name: String(payload.name).toLowerCase() }) });
                }}
              />
            </>
          );
        }}
      </LoadedView>
    </Section>
  );
}
