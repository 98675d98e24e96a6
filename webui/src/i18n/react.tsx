/** The chosen language for React: `useI18n()` gives `t`, `tx` (placeholders filled with elements) and Intl formats. */
import { createContext, Fragment, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from 'react';
import {
  fill,
  isLocale,
  type Locale,
  loadMessages,
  type MessageKey,
  type Messages,
  matchLocale,
  type Params,
  setActiveLocale,
} from './core.js';
import en from './locales/en.js';

const STORAGE_KEY = 'nanobot.locale';

export interface Translator {
  locale: Locale;
  t(key: MessageKey, params?: Params): string;
  /** For a message with elements in it (`{command}` as <code>): the text split around them. */
  tx(key: MessageKey, parts: Record<string, ReactNode>): ReactNode;
  number(value: number, options?: Intl.NumberFormatOptions): string;
  dateTime(value: string | number | Date): string;
  /** "3 minutes ago", "yesterday", or the date, in the locale's words. */
  ago(iso: string): string;
}

export function translator(locale: Locale, messages: Messages): Translator {
  const t = (key: MessageKey, params?: Params) => fill(messages[key], params, locale);
  const relative = new Intl.RelativeTimeFormat(locale, { numeric: 'auto' });
  return {
    locale,
    t,
    tx(key, parts) {
      return messages[key].split(/\{(\w+)\}/g).map((piece, i) => (
        // Odd pieces are placeholder names.
        // biome-ignore lint/suspicious/noArrayIndexKey: the pieces of one fixed message never move
        <Fragment key={i}>{i % 2 === 1 ? (parts[piece] ?? `{${piece}}`) : piece}</Fragment>
      ));
    },
    number: (value, options) => new Intl.NumberFormat(locale, options).format(value),
    dateTime: (value) =>
      new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(value)),
    ago(iso) {
      const seconds = (Date.now() - Date.parse(iso)) / 1000;
      if (!Number.isFinite(seconds)) return '';
      if (seconds < 60) return relative.format(0, 'second');
      if (seconds < 3600) return relative.format(-Math.floor(seconds / 60), 'minute');
      if (seconds < 86_400) return relative.format(-Math.floor(seconds / 3600), 'hour');
      return new Intl.DateTimeFormat(locale, { dateStyle: 'medium' }).format(new Date(iso));
    },
  };
}

/** The saved choice, else the browser's languages (navigator.languages, most wanted first). */
export function initialLocale(): Locale {
  const saved = localStorage.getItem(STORAGE_KEY);
  if (isLocale(saved)) return saved;
  return matchLocale(navigator.languages?.length ? navigator.languages : [navigator.language]);
}

/** The translator for the page's first render (its locale's chunk loaded; English if that fails). */
export async function startingTranslator(): Promise<Translator> {
  const locale = initialLocale();
  const messages = await loadMessages(locale).catch(() => undefined);
  const [chosen, chosenMessages] = messages ? [locale, messages] : (['en', en] as const);
  setActiveLocale(chosen, chosenMessages);
  return translator(chosen, chosenMessages);
}

interface I18nValue extends Translator {
  setLocale(locale: Locale): Promise<void>;
}

const I18nContext = createContext<I18nValue | null>(null);

export function I18nProvider({ initial, children }: { initial: Translator; children: ReactNode }) {
  const [active, setActive] = useState(initial);
  useEffect(() => {
    document.documentElement.lang = active.locale;
  }, [active]);
  const setLocale = useCallback(async (locale: Locale) => {
    const messages = await loadMessages(locale);
    localStorage.setItem(STORAGE_KEY, locale);
    setActiveLocale(locale, messages);
    setActive(translator(locale, messages));
  }, []);
  const value = useMemo(() => ({ ...active, setLocale }), [active, setLocale]);
  return <I18nContext.Provider value={value}>{children}</I18nContext.Provider>;
}

export function useI18n(): I18nValue {
  const value = useContext(I18nContext);
  if (!value) throw new Error('useI18n outside <I18nProvider>');
  return value;
}
