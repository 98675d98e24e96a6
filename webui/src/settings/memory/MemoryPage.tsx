/**
 * Settings › Memory: the memory files as they are (SOUL.md, USER.md, memory/MEMORY.md), the Dream log with each
 * change's diff and a restore, and a search over history.jsonl (src/webui/memory.ts; /dream-log and /dream-restore
 * in a chat do the same).
 */
import { LoadedView, PageHeader, Section, useLoad } from '../controls.js';
import type { SettingsPageProps } from '../pages.js';
import { usePageText } from '../text.js';
import { DreamLog } from './DreamLog.js';
import { HistorySearch } from './HistorySearch.js';
import { MemoryFiles } from './MemoryFiles.js';
import { memoryMessages } from './messages.js';
import type { MemoryCommit, MemoryFile } from './types.js';
import './memory.css';

export function MemoryPage({ client }: SettingsPageProps) {
  const { t } = usePageText(memoryMessages);
  const files = useLoad(() => client.get<{ files: MemoryFile[] }>('webui/memory'));
  const log = useLoad(() => client.get<{ commits: MemoryCommit[] }>('webui/memory/log'));
  return (
    <>
      <PageHeader title={t('memory.title')} intro={t('memory.intro')} />
      <Section title={t('memory.files')}>
        <LoadedView loaded={files}>{(data) => <MemoryFiles files={data.files} />}</LoadedView>
      </Section>
      <Section title={t('memory.log')}>
        <LoadedView loaded={log}>
          {(data) => (
            <DreamLog
              commits={data.commits}
              client={client}
              onRestored={async () => {
                await Promise.all([files.reload(), log.reload()]);
              }}
            />
          )}
        </LoadedView>
      </Section>
      <Section title={t('memory.history')}>
        <HistorySearch client={client} />
      </Section>
    </>
  );
}
