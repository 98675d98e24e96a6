/**
 * A settings page's own strings, all ten languages in one file beside the page (so each page owns its words and the
 * chat bundle does not carry them). Keys start with the page's id (`models.title`); test/webui/i18n.test.ts checks
 * every catalog as it checks the main locales: same keys, same `{placeholders}`, translated, each key used.
 * (No JSX here: the i18n test imports the catalogs under the root tsconfig.) The page reads it with usePageText.
 */
import type { Locale } from '../i18n/core.js';

export type PageMessages<K extends string> = { readonly [L in Locale]: Readonly<Record<K, string>> };

/** English names the keys; every other language must give each of them (the type checker says which is missing). */
export function pageMessages<const E extends Record<string, string>>(
  en: E,
  others: { readonly [L in Exclude<Locale, 'en'>]: Readonly<Record<keyof E, string>> },
): PageMessages<keyof E & string> {
  return { en, ...others } as PageMessages<keyof E & string>;
}
