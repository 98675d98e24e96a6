import { memo, useMemo } from 'react';
import { renderMarkdown } from '../markdown.js';

/** Sanitised Markdown (see markdown.ts); copy buttons are handled by one listener on the chat. */
export const Markdown = memo(function Markdown({ text, className }: { text: string; className?: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  // biome-ignore lint/security/noDangerouslySetInnerHtml: the HTML comes out of DOMPurify.
  return <div className={`markdown ${className ?? ''}`} dangerouslySetInnerHTML={{ __html: html }} />;
});
