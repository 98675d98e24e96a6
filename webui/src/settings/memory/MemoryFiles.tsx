/** The three memory files, one at a time (a row of buttons picks which), rendered as Markdown. */
import { useState } from 'react';
import { Markdown } from '../../components/Markdown.js';
import { Notice } from '../controls.js';
import { usePageText } from '../text.js';
import { memoryMessages } from './messages.js';
import type { MemoryFile } from './types.js';

export function MemoryFiles({ files }: { files: MemoryFile[] }) {
  const { t, number } = usePageText(memoryMessages);
  const [chosen, setChosen] = useState(files.at(-1)?.path ?? '');
  const file = files.find((entry) => entry.path === chosen) ?? files[0];
  const help: Record<string, string> = {
    'SOUL.md': t('memory.help.soul'),
    'USER.md': t('memory.help.user'),
    'memory/MEMORY.md': t('memory.help.memory'),
  };
  return (
    <>
      <fieldset className="memory-file-picker">
        <legend className="sr-only">{t('memory.pick')}</legend>
        {files.map((entry) => (
          <button
            key={entry.path}
            type="button"
            className="button"
            aria-pressed={entry.path === file?.path}
            onClick={() => setChosen(entry.path)}
          >
            {entry.path.split('/').at(-1)}
          </button>
        ))}
      </fieldset>
      {file && (
        <div className="memory-file" data-testid="memory-file">
          <p className="muted memory-file-meta">
            <code>{file.path}</code> · {help[file.path]}
            {file.exists && <> · {t('memory.size', { size: number(file.size) })}</>}
          </p>
          {file.error ? (
            <Notice kind="error">{t('memory.refused', { path: file.path, error: file.error })}</Notice>
          ) : !file.exists ? (
            <p className="muted">{t('memory.missing', { path: file.path })}</p>
          ) : (
            <>
              {file.truncated && <Notice kind="info">{t('memory.truncated')}</Notice>}
              <Markdown className="memory-markdown" text={file.content} />
            </>
          )}
        </div>
      )}
    </>
  );
}
