/**
 * Settings › Tools: web search, tool safety (shell sandbox, workspace restriction, SSRF whitelist) from
 * `GET /api/settings`, and the MCP servers. Every save goes to config.json through the gateway, which applies it.
 */
import { useState } from 'react';
import { LoadedView, PageHeader, useLoad } from '../controls.js';
import type { SettingsPageProps } from '../pages.js';
import { usePageText } from '../text.js';
import { McpSection } from './McpSection.js';
import { toolsMessages } from './messages.js';
import { SafetySection } from './SafetySection.js';
import type { ToolSettings } from './types.js';
import { WebSearchSection } from './WebSearchSection.js';
import './tools.css';

export function ToolsPage({ client }: SettingsPageProps) {
  const { t } = usePageText(toolsMessages);
  const loaded = useLoad(() => client.get<ToolSettings>('settings'));
  const [latest, setLatest] = useState<ToolSettings | null>(null);
  return (
    <div className="tools-page">
      <PageHeader title={t('tools.title')} intro={t('tools.intro')} />
      <LoadedView loaded={loaded}>
        {(first) => {
          const settings = latest ?? first;
          return (
            <>
              <WebSearchSection client={client} settings={settings} onSaved={setLatest} />
              <SafetySection client={client} settings={settings} onSaved={setLatest} />
            </>
          );
        }}
      </LoadedView>
      <McpSection client={client} />
    </div>
  );
}
