import { useState } from 'react';
import type { MediaUrl } from '../../../src/channels/websocket/frames.js';
import type { FilePreviewBody } from '../api.js';
import { useI18n } from '../i18n/react.js';
import type { Block } from '../state.js';
import { EditDiff, editChanges } from './EditDiff.js';
import { Icon } from './Icon.js';
import { ImageThumb } from './Lightbox.js';
import { Markdown } from './Markdown.js';

/** The model's reasoning: open while it streams, then folded away behind its summary line. */
export function ReasoningCard({ block }: { block: Extract<Block, { type: 'reasoning' }> }) {
  const { t } = useI18n();
  return (
    <details className="card reasoning" open={!block.done}>
      <summary>
        <span className={block.done ? 'dot' : 'dot pulse'} aria-hidden="true" />
        {block.done ? t('chat.reasoning') : t('chat.thinking')}
      </summary>
      <div className="card-body">
        <Markdown text={block.text} />
      </div>
    </details>
  );
}

/** Loads the file an edit wrote, for its card's preview (the chat's file-preview route). */
export type PreviewFile = (path: string) => Promise<FilePreviewBody>;

/** One tool call: its name in the summary; arguments and the result (preview) when opened. */
export function ToolCard({ block, preview }: { block: Extract<Block, { type: 'tool' }>; preview?: PreviewFile }) {
  const { t } = useI18n();
  const state = !block.done ? 'running' : block.isError ? 'failed' : 'done';
  const stateLabel =
    state === 'running' ? t('chat.toolRunning') : state === 'failed' ? t('chat.toolFailed') : t('chat.toolDone');
  const changes = editChanges(block.name, block.args);
  return (
    <details className={`card tool ${state}`} data-testid="tool-card">
      <summary>
        <Icon name="tool" className="tool-icon" />
        <code className="tool-name">{block.name}</code>
        <span className="tool-state">{stateLabel}</span>
      </summary>
      <div className="card-body">
        {changes.length > 0 && (
          <>
            <div className="label">{t('diff.title')}</div>
            <EditDiff changes={changes} />
            {preview && state === 'done' && (
              <FilePreview paths={[...new Set(changes.map((c) => c.path))]} load={preview} />
            )}
          </>
        )}
        <div className="label">{t('chat.arguments')}</div>
        <pre className="tool-pre">{formatJson(block.args) || t('chat.none')}</pre>
        {block.result !== undefined && (
          <>
            <div className="label">{t('chat.result')}</div>
            <pre className="tool-pre">{block.result || t('chat.empty')}</pre>
          </>
        )}
      </div>
    </details>
  );
}

/**
 * Files the agent sent: images as thumbnails that open full size, videos shown, other files as download links
 * (signed URLs, no token needed).
 */
export function MediaList({ media }: { media: MediaUrl[] }) {
  return (
    <div className="media-list">
      {media.map((item) => (
        <MediaItem key={item.url} item={item} />
      ))}
    </div>
  );
}

function MediaItem({ item }: { item: MediaUrl }) {
  if (item.kind === 'image') return <ImageThumb item={item} />;
  if (item.kind === 'video') {
    // biome-ignore lint/a11y/useMediaCaption: the agent's file has no captions to offer
    return <video className="media-image" src={item.url} controls />;
  }
  return (
    <a className="media-file" href={item.url} download={item.name}>
      <Icon name="file" className="inline-icon" /> {item.name}
    </a>
  );
}

function formatJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** The file as it is now, on request: one button per file the edit touched, its text below once loaded. */
function FilePreview({ paths, load }: { paths: string[]; load: PreviewFile }) {
  const { t, number } = useI18n();
  const [shown, setShown] = useState<Record<string, FilePreviewBody | string>>({});
  const open = async (path: string) => {
    try {
      const body = await load(path);
      setShown((all) => ({ ...all, [path]: body }));
    } catch (err) {
      setShown((all) => ({ ...all, [path]: (err as Error).message }));
    }
  };
  return (
    <>
      {paths.map((path) => {
        const file = shown[path];
        if (file === undefined) {
          return (
            <button
              key={path}
              type="button"
              className="button button-secondary preview-button"
              onClick={() => void open(path)}
            >
              {t('preview.show', { path })}
            </button>
          );
        }
        if (typeof file === 'string') {
          return (
            <p key={path} className="field-error" role="alert">
              {t('preview.failed', { path, error: file })}
            </p>
          );
        }
        return (
          <figure key={path} className="file-preview" data-testid="file-preview">
            <figcaption>
              <code>{file.display_path}</code>{' '}
              <span className="diff-count">{t('preview.size', { size: number(file.size) })}</span>
            </figcaption>
            {/* A scrolling box is reachable from the keyboard (to scroll it), named for a screen reader. */}
            <section
              className="preview-scroll"
              // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take focus to be scrolled
              tabIndex={0}
              aria-label={t('preview.label', { path: file.display_path })}
            >
              <pre>{file.content}</pre>
            </section>
            {file.truncated && <p className="diff-more">{t('preview.truncated')}</p>}
          </figure>
        );
      })}
    </>
  );
}
