import { memo, useMemo } from 'react';
import { useI18n } from '../i18n/react.js';
import { renderMarkdown } from '../markdown.js';

/** Sanitised Markdown (see markdown.ts); copy buttons are handled by one listener on the chat. */
export const Markdown = memo(function Markdown({ text, className }: { text: string; className?: string }) {
  const { locale } = useI18n();
  // biome-ignore lint/correctness/useExhaustiveDependencies: the copy buttons' labels are in the chosen language
  const html = useMemo(() => renderMarkdown(text), [text, locale]);
  // biome-ignore lint/security/noDangerouslySetInnerHtml: the HTML comes out of DOMPurify.
  return <div className={`markdown ${className ?? ''}`} dangerouslySetInnerHTML={{ __html: html }} />;
});
