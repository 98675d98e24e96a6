/**
 * The WebUI's languages, without React: which locales exist, which one a browser asks for, and filling a message's
 * `{placeholders}` (numbers through Intl). A small typed helper instead of an i18n library: the UI has about 80
 * strings and no plurals that Intl does not cover, and English ships in the main bundle while each other locale is
 * its own chunk, loaded only when chosen.
 */
import en, { type MessageKey, type Messages } from './locales/en.js';

export type { MessageKey, Messages };

/** Each locale under its own name (a reader looks for their language as they write it). */
export const LOCALES = [
  { code: 'en', name: 'English' },
  { code: 'zh-CN', name: '简体中文' },
  { code: 'zh-TW', name: '繁體中文' },
  { code: 'ja', name: '日本語' },
  { code: 'ko', name: '한국어' },
  { code: 'es', name: 'Español' },
  { code: 'fr', name: 'Français' },
  { code: 'pt-BR', name: 'Português (Brasil)' },
  { code: 'vi', name: 'Tiếng Việt' },
  { code: 'id', name: 'Bahasa Indonesia' },
] as const;

export type Locale = (typeof LOCALES)[number]['code'];

const LOADERS: Record<Exclude<Locale, 'en'>, () => Promise<{ default: Messages }>> = {
  'zh-CN': () => import('./locales/zh-CN.js'),
  'zh-TW': () => import('./locales/zh-TW.js'),
  ja: () => import('./locales/ja.js'),
  ko: () => import('./locales/ko.js'),
  es: () => import('./locales/es.js'),
  fr: () => import('./locales/fr.js'),
  'pt-BR': () => import('./locales/pt-BR.js'),
  vi: () => import('./locales/vi.js'),
  id: () => import('./locales/id.js'),
};

export function isLocale(value: unknown): value is Locale {
  return LOCALES.some((locale) => locale.code === value);
}

/** Chinese written in Traditional characters: Taiwan, Hong Kong, Macau, or an explicit Hant script. */
const TRADITIONAL = /^zh-(hant|tw|hk|mo)\b/;

/** The first of the browser's languages (most wanted first) that we have, matched by language; else English. */
export function matchLocale(tags: readonly string[]): Locale {
  for (const raw of tags) {
    const tag = raw.toLowerCase().replace(/_/g, '-');
    const language = tag.split('-')[0];
    if (language === 'zh') return TRADITIONAL.test(tag) ? 'zh-TW' : 'zh-CN';
    // Brazilian Portuguese is the Portuguese we have; `in` is Indonesian's old code.
    if (language === 'pt') return 'pt-BR';
    if (language === 'in') return 'id';
    const found = LOCALES.find((locale) => locale.code === language);
    if (found) return found.code;
  }
  return 'en';
}

// Code outside React (the Markdown renderer's copy buttons, the socket's errors) translates with the language
// the page shows; the React provider keeps this in step.
let active: { locale: Locale; messages: Messages } = { locale: 'en', messages: en };

export function setActiveLocale(locale: Locale, messages: Messages): void {
  active = { locale, messages };
}

export function translate(key: MessageKey, params?: Params): string {
  return fill(active.messages[key], params, active.locale);
}

export async function loadMessages(locale: Locale): Promise<Messages> {
  return locale === 'en' ? en : (await LOADERS[locale]()).default;
}

export type Params = Record<string, string | number>;

/** The message with each `{name}` filled in; numbers formatted for the locale; an unknown `{name}` stays as is. */
export function fill(template: string, params: Params | undefined, locale: Locale): string {
  if (!params) return template;
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => {
    const value = params[name];
    if (value === undefined) return whole;
    return typeof value === 'number' ? new Intl.NumberFormat(locale).format(value) : value;
  });
}

/** The `{name}` placeholders a message uses, sorted (each locale must use the same ones). */
export function placeholders(template: string): string[] {
  return [...template.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? '').sort();
}
