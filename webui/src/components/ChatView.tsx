import { useEffect, useRef } from 'react';
import { useI18n } from '../i18n/react.js';
import { copyCodeFrom } from '../markdown.js';
import type { ChatState, Item } from '../state.js';
import { MediaList, type PreviewFile, ReasoningCard, ToolCard } from './Blocks.js';
import { ErrorNote } from './ErrorNote.js';
import { Icon } from './Icon.js';
import { Markdown } from './Markdown.js';
import { AssistantActions, UserActions } from './MessageActions.js';

export interface ChatViewProps {
  chat: ChatState;
  onSuggest(text: string): void;
  /** Sends the chat's last question again. */
  onRetry(): void;
  /** Edit a question: `userIndex` counts the chat's questions from 0 (the fork point), `text` goes to the composer. */
  onEdit(userIndex: number, text: string): void;
  /** Loads a file an edit tool wrote, for its card's preview. */
  onPreview?: PreviewFile;
}

export function ChatView({ chat, onSuggest, onRetry, onEdit, onPreview }: ChatViewProps) {
  const { t } = useI18n();
  const end = useRef<HTMLDivElement>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);

  // Follow the answer as it streams, unless the reader scrolled up.
  useEffect(() => {
    if (stick.current) end.current?.scrollIntoView({ block: 'end' });
  });

  const onScroll = () => {
    const el = scroller.current;
    if (el) stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  };
  // One listener for every code block's copy button (they live in sanitised HTML, outside React).
  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const onClick = (event: Event) => {
      const target = event.target as HTMLElement;
      if (target.classList.contains('copy-code')) void copyCodeFrom(target);
    };
    el.addEventListener('click', onClick);
    return () => el.removeEventListener('click', onClick);
  }, []);

  if (chat.items.length === 0) {
    const suggestions = [t('chat.suggestCapabilities'), t('chat.suggestNotes'), t('chat.suggestReminder')];
    return (
      <div className="chat empty">
        <div className="welcome">
          <Icon name="bot" className="logo" />
          <h1>{t('chat.welcome')}</h1>
          <div className="suggestions">
            {suggestions.map((text) => (
              <button key={text} type="button" onClick={() => onSuggest(text)}>
                {text}
              </button>
            ))}
          </div>
        </div>
      </div>
    );
  }
  return (
    <div className="chat" ref={scroller} onScroll={onScroll}>
      <div className="thread" role="log" aria-label={t('chat.conversation')} aria-live="off">
        {chat.items.map((item, index) => (
          <ItemView
            key={item.id}
            item={item}
            // Retry belongs to the last answer only, once its turn is over.
            onRetry={!chat.busy && index === chat.items.length - 1 ? onRetry : undefined}
            onEdit={chat.busy ? undefined : onEdit}
            userIndex={questionsBefore(chat, index)}
            onPreview={onPreview}
          />
        ))}
        {chat.busy && lastIsUser(chat) && (
          <div className="msg assistant">
            <div className="typing" role="status" aria-label={t('chat.working')}>
              <span />
              <span />
              <span />
            </div>
          </div>
        )}
        <div ref={end} />
      </div>
      <div className="sr-only" role="status">
        {chat.busy ? '' : t('chat.answerComplete')}
      </div>
    </div>
  );
}

function lastIsUser(chat: ChatState): boolean {
  return chat.items.at(-1)?.kind === 'user';
}

/**
 * How many of the chat's questions come before item `index` (the gateway's `before_user_index`). Slash commands
 * are answered outside the conversation and never stored in it, so they are not counted.
 */
function questionsBefore(chat: ChatState, index: number): number {
  return chat.items.slice(0, index).filter((item) => item.kind === 'user' && !item.text.startsWith('/')).length;
}

interface ItemViewProps {
  item: Item;
  onRetry: (() => void) | undefined;
  onEdit: ((userIndex: number, text: string) => void) | undefined;
  userIndex: number;
  onPreview: PreviewFile | undefined;
}

function ItemView({ item, onRetry, onEdit, userIndex, onPreview }: ItemViewProps) {
  if (item.kind === 'user') {
    const editable = onEdit && item.text && !item.text.startsWith('/');
    return (
      <div className="msg user" data-testid="user-message">
        <div className="bubble">
          {item.text && <div className="user-text">{item.text}</div>}
          {item.media.length > 0 && (
            <div className="attachments">
              {item.media.map((name) => (
                <span key={name} className="chip">
                  <Icon name="file" className="inline-icon" /> {name}
                </span>
              ))}
            </div>
          )}
        </div>
        {item.text && (
          <UserActions text={item.text} onEdit={editable ? () => onEdit(userIndex, item.text) : undefined} />
        )}
      </div>
    );
  }
  const failed = item.blocks.some((block) => block.type === 'note' && block.tone === 'error');
  return (
    <div className={`msg assistant${item.done ? '' : ' streaming'}`} data-testid="assistant-message">
      {item.blocks.map((block) => {
        switch (block.type) {
          case 'reasoning':
            return <ReasoningCard key={block.id} block={block} />;
          case 'tool':
            return <ToolCard key={block.id} block={block} preview={onPreview} />;
          case 'note':
            if (block.tone === 'error') return <ErrorNote key={block.id} block={block} onRetry={onRetry} />;
            return (
              <div key={block.id} className="note hint">
                <div className="note-text">{block.text}</div>
              </div>
            );
          default:
            // Command output keeps its lines and `<placeholders>`: React escapes it, CSS keeps the line breaks.
            if (block.plain) {
              return (
                <div key={block.id} className="plain-text" data-testid="plain-text">
                  {block.text}
                </div>
              );
            }
            return <Markdown key={block.id} text={block.text} className={block.done ? '' : 'cursor'} />;
        }
      })}
      {item.media.length > 0 && <MediaList media={item.media} />}
      {item.done && <AssistantActions item={item} onRetry={failed ? undefined : onRetry} />}
    </div>
  );
}
