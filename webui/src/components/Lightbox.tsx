/**
 * A picture the agent sent, as a thumbnail that opens it full size: a modal <dialog> (focus moves into it, Escape
 * or a click beside the picture closes it, focus comes back to the thumbnail), with the file's name and a download.
 */
import { useEffect, useRef, useState } from 'react';
import type { MediaUrl } from '../../../src/channels/websocket/frames.js';
import { useI18n } from '../i18n/react.js';
import { Icon } from './Icon.js';

export function ImageThumb({ item }: { item: MediaUrl }) {
  const { t } = useI18n();
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  return (
    <>
      <button
        ref={button}
        type="button"
        className="media-thumb"
        aria-label={t('media.open', { name: item.name })}
        aria-haspopup="dialog"
        onClick={() => setOpen(true)}
      >
        <img className="media-image" src={item.url} alt={item.name} />
      </button>
      {open && (
        <Lightbox
          item={item}
          onClose={() => {
            setOpen(false);
            button.current?.focus();
          }}
        />
      )}
    </>
  );
}

/** `onClose` runs once the dialog is closed (the page is no longer inert), so it can put the focus back. */
function Lightbox({ item, onClose: closed }: { item: MediaUrl; onClose(): void }) {
  const { t } = useI18n();
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    return () => element?.close();
  }, []);
  const onClose = () => {
    dialog.current?.close();
    closed();
  };
  return (
    // A click on the backdrop lands on the dialog itself (its content is a child): that closes it. Escape is the
    // dialog's own cancel; the close button is the keyboard's way.
    // biome-ignore lint/a11y/useKeyWithClickEvents: Escape (the dialog's cancel) and the close button cover the keys
    <dialog
      ref={dialog}
      className="lightbox"
      aria-label={item.name}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
      onClick={(event) => event.target === event.currentTarget && onClose()}
    >
      <div className="lightbox-bar">
        <span className="lightbox-name">{item.name}</span>
        <a className="button button-secondary" href={item.url} download={item.name}>
          {t('media.download')}
        </a>
        <button
          type="button"
          className="icon-button"
          aria-label={t('media.close')}
          title={t('media.close')}
          onClick={onClose}
        >
          <Icon name="close" />
        </button>
      </div>
      <img className="lightbox-image" src={item.url} alt={item.name} />
    </dialog>
  );
}
