/**
 * The WebUI's languages (webui/src/i18n): every locale has exactly English's keys with the same `{placeholders}`,
 * every key the source uses exists and every key exists because the source uses it, no visible English is left in
 * the components outside the i18n layer, and a browser's languages pick the right locale. Each settings page's own
 * catalog (webui/src/settings/<page>/messages.ts, listed in settings/catalogs.ts) is held to the same rules.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { fill, LOCALES, matchLocale, placeholders } from '../../webui/src/i18n/core.js';
import en from '../../webui/src/i18n/locales/en.js';
import es from '../../webui/src/i18n/locales/es.js';
import fr from '../../webui/src/i18n/locales/fr.js';
import id from '../../webui/src/i18n/locales/id.js';
import ja from '../../webui/src/i18n/locales/ja.js';
import ko from '../../webui/src/i18n/locales/ko.js';
import ptBR from '../../webui/src/i18n/locales/pt-BR.js';
import vi from '../../webui/src/i18n/locales/vi.js';
import zhCN from '../../webui/src/i18n/locales/zh-CN.js';
import zhTW from '../../webui/src/i18n/locales/zh-TW.js';
import { PAGE_CATALOGS } from '../../webui/src/settings/catalogs.js';

const SRC = join(import.meta.dirname, '..', '..', 'webui', 'src');
const LOCALE_DIR = join(SRC, 'i18n', 'locales');

const TRANSLATIONS: Record<string, Record<string, string>> = {
  'zh-CN': zhCN,
  'zh-TW': zhTW,
  ja,
  ko,
  es,
  fr,
  'pt-BR': ptBR,
  vi,
  id,
};
const englishKeys = Object.keys(en).sort();
/** Every key a translate call may name: the main locale's and each settings page's. */
const knownKeys = new Set([
  ...englishKeys,
  ...Object.values(PAGE_CATALOGS).flatMap((catalog) => Object.keys(catalog.en)),
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) ? [path] : [];
  });
}
/** The app's code, without the i18n layer itself (which defines `t` rather than calling it with a key). */
const appFiles = sourceFiles(SRC).filter((file) => !relative(SRC, file).startsWith('i18n'));
const read = (file: string) => readFileSync(file, 'utf8');

const TRANSLATE = new Set(['t', 'tx', 'translate']);
/** Attributes a reader sees or hears. */
const SHOWN_ATTRIBUTES = new Set(['aria-label', 'title', 'placeholder', 'alt', 'label']);

interface Scan {
  /** Each translate call: `t('key')`, `tx('key', …)`, `translate('key')` (`key` null when not a literal). */
  calls: { where: string; key: string | null }[];
  /** Words shown to the reader that are not from a translate call. */
  hardCoded: string[];
}

/** The app's source parsed (TypeScript's own parser), not pattern-matched: generics and JSX look alike to a regex. */
function scan(): Scan {
  const result: Scan = { calls: [], hardCoded: [] };
  for (const file of appFiles) {
    const source = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX);
    const where = (node: ts.Node) =>
      `${relative(SRC, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node)) {
        const callee = ts.isPropertyAccessExpression(node.expression) ? node.expression.name : node.expression;
        if (ts.isIdentifier(callee) && TRANSLATE.has(callee.text)) {
          const arg = node.arguments[0];
          result.calls.push({ where: where(node), key: arg && ts.isStringLiteral(arg) ? arg.text : null });
        }
      }
      if (ts.isJsxText(node) && /\p{L}/u.test(node.text)) {
        const element = node.parent;
        const tag = ts.isJsxElement(element) ? element.openingElement.tagName.getText(source) : '';
        // Commands in <code> and the product's name read the same in every language.
        if (tag !== 'code' && node.text.trim() !== 'nanobot')
          result.hardCoded.push(`${where(node)} ${node.text.trim()}`);
      }
      if (ts.isJsxAttribute(node) && SHOWN_ATTRIBUTES.has(node.name.getText(source))) {
        const value = node.initializer;
        if (value && ts.isStringLiteral(value) && /\p{L}/u.test(value.text)) {
          result.hardCoded.push(`${where(node)} ${node.getText(source)}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return result;
}

describe('WebUI locales', () => {
  it('lists the ten languages, each with its own file (and no file without a listing)', () => {
    const codes = LOCALES.map((locale) => locale.code);
    expect(codes).toEqual(['en', 'zh-CN', 'zh-TW', 'ja', 'ko', 'es', 'fr', 'pt-BR', 'vi', 'id']);
    const files = readdirSync(LOCALE_DIR)
      .map((name) => name.replace(/\.ts$/, ''))
      .sort();
    expect(files).toEqual([...codes].sort());
    expect(Object.keys(TRANSLATIONS).sort()).toEqual(codes.filter((code) => code !== 'en').sort());
  });

  it.each(Object.entries(TRANSLATIONS))('%s has every English key and no other', (_code, messages) => {
    const keys = Object.keys(messages);
    expect({
      missing: englishKeys.filter((key) => !keys.includes(key)),
      extra: keys.filter((key) => !(key in en)),
    }).toEqual({ missing: [], extra: [] });
  });

  it.each(Object.entries(TRANSLATIONS))(
    '%s uses the same {placeholders} as English in each message',
    (_code, messages) => {
      const wrong = englishKeys.filter(
        (key) => placeholders(messages[key] ?? '').join() !== placeholders(en[key as keyof typeof en]).join(),
      );
      expect(wrong).toEqual([]);
    },
  );

  it.each(Object.entries(TRANSLATIONS))(
    '%s is translated (no empty message, most differ from English)',
    (_code, messages) => {
      expect(englishKeys.filter((key) => !messages[key]?.trim())).toEqual([]);
      const same = englishKeys.filter((key) => messages[key] === en[key as keyof typeof en]);
      // A few words are the same in both (Token, Status, Conversation, Message); a copied file is not.
      expect(same.length).toBeLessThan(englishKeys.length * 0.2);
    },
  );
});

describe.each(Object.entries(PAGE_CATALOGS))('settings page %s’s catalog', (page, catalog) => {
  const keys = Object.keys(catalog.en).sort();
  const others = Object.entries(catalog).filter(([code]) => code !== 'en');

  it('has every language, and its keys are its own (named after the page, not in the main locale)', () => {
    expect(Object.keys(catalog).sort()).toEqual(LOCALES.map((locale) => locale.code).sort());
    expect(keys.filter((key) => !key.startsWith(`${page}.`) || key in en)).toEqual([]);
  });

  it.each(others)('%s has every key, the same {placeholders}, and is translated', (_code, messages) => {
    expect(Object.keys(messages).sort()).toEqual(keys);
    const english = catalog.en as Record<string, string>;
    const given = messages as Record<string, string>;
    expect(
      keys.filter((key) => placeholders(given[key] ?? '').join() !== placeholders(english[key] ?? '').join()),
    ).toEqual([]);
    expect(keys.filter((key) => !given[key]?.trim())).toEqual([]);
    expect(keys.filter((key) => given[key] === english[key]).length).toBeLessThan(Math.max(2, keys.length * 0.2));
  });
});

describe('WebUI source and the locales', () => {
  it('every translate call names a key English defines, as a literal (so this scan sees it)', () => {
    const { calls } = scan();
    expect(calls.length).toBeGreaterThan(50);
    expect(calls.filter((call) => call.key === null).map((call) => call.where)).toEqual([]);
    expect(
      calls.filter((call) => call.key && !knownKeys.has(call.key)).map((call) => `${call.where} ${call.key}`),
    ).toEqual([]);
  });

  it('every key is used by the source (none left over)', () => {
    const used = new Set(scan().calls.map((call) => call.key));
    expect([...knownKeys].filter((key) => !used.has(key))).toEqual([]);
  });

  it('no visible text in the components bypasses the i18n layer', () => {
    expect(scan().hardCoded).toEqual([]);
  });
});

describe('choosing the locale', () => {
  it.each([
    [['en-US', 'fr'], 'en'],
    [['fr-FR', 'en'], 'fr'],
    [['fr-CA'], 'fr'],
    [['de-DE', 'ja-JP'], 'ja'],
    [['ko-KR'], 'ko'],
    [['zh-CN'], 'zh-CN'],
    [['zh'], 'zh-CN'],
    [['zh-SG'], 'zh-CN'],
    [['zh-Hans-CN'], 'zh-CN'],
    [['zh-TW'], 'zh-TW'],
    [['zh-HK'], 'zh-TW'],
    [['zh-Hant'], 'zh-TW'],
    [['zh_TW'], 'zh-TW'],
    [['pt-PT'], 'pt-BR'],
    [['pt'], 'pt-BR'],
    [['es-MX'], 'es'],
    [['vi-VN'], 'vi'],
    [['id-ID'], 'id'],
    [['in-ID'], 'id'],
    [['de', 'nl'], 'en'],
    [[], 'en'],
  ] as const)('%j → %s', (tags, expected) => {
    expect(matchLocale(tags)).toBe(expected);
  });

  it('fills placeholders, numbers in the locale’s digits and separators', () => {
    expect(fill(en['status.tokens'], { used: 8084, window: 200_000, share: '4%' }, 'en')).toBe(
      '~8,084 of 200,000 tokens (4%)',
    );
    expect(fill(fr['status.tokens'], { used: 8084, window: 200_000, share: '4 %' }, 'fr')).toBe(
      `~${new Intl.NumberFormat('fr').format(8084)} sur ${new Intl.NumberFormat('fr').format(200_000)} jetons (4 %)`,
    );
    expect(fill('{a} {b}', { a: 'x' }, 'en')).toBe('x {b}');
  });
});
