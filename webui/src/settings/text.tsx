/** A settings page's `t`/`tx` over its own catalog (messages.ts) in the chosen language. */
import { Fragment, type ReactNode } from 'react';
import { fill, type Params } from '../i18n/core.js';
import { useI18n } from '../i18n/react.js';
import type { PageMessages } from './messages.js';

/** `t`/`tx` over the page's catalog in the chosen language; the rest (number, dateTime, ago) as useI18n gives. */
export function usePageText<K extends string>(messages: PageMessages<K>) {
  const i18n = useI18n();
  const catalog = messages[i18n.locale];
  return {
    ...i18n,
    t: (key: K, params?: Params) => fill(catalog[key], params, i18n.locale),
    tx: (key: K, parts: Record<string, ReactNode>): ReactNode =>
      catalog[key].split(/\{(\w+)\}/g).map((piece, i) => (
        // Odd pieces are placeholder names.
        // biome-ignore lint/suspicious/noArrayIndexKey: the pieces of one fixed message never move
        <Fragment key={i}>{i % 2 === 1 ? (parts[piece] ?? `{${piece}}`) : piece}</Fragment>
      )),
  };
}
