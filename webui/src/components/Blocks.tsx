import type { MediaUrl } from '../../../src/channels/websocket/frames.js';
import { useI18n } from '../i18n/react.js';
import type { Block } from '../state.js';
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

/** One tool call: its name in the summary; arguments and the result (preview) when opened. */
export function ToolCard({ block }: { block: Extract<Block, { type: 'tool' }> }) {
  const { t } = useI18n();
  const state = !block.done ? 'running' : block.isError ? 'failed' : 'done';
  const stateLabel =
    state === 'running' ? t('chat.toolRunning') : state === 'failed' ? t('chat.toolFailed') : t('chat.toolDone');
  return (
    <details className={`card tool ${state}`} data-testid="tool-card">
      <summary>
        <Icon name="tool" className="tool-icon" />
        <code className="tool-name">{block.name}</code>
        <span className="tool-state">{stateLabel}</span>
      </summary>
      <div className="card-body">
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
