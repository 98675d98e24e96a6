/**
 * Reads DuckDuckGo's HTML results page (html.duckduckgo.com/html/), the keyless default search back-end.
 * Result links point at a `/l/?uddg=<target>` redirector; we return the target. Ads (`result--ad`, `/y.js`) are skipped.
 */
import { parseHTML } from 'linkedom';
import { DuckDuckGoBlockedError, type SearchHit } from './search-providers.js';

interface ResultElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
  querySelector(selector: string): ResultElement | null;
  querySelectorAll(selector: string): Iterable<ResultElement>;
}

/** The destination of a DuckDuckGo result link, or null for ads and internal links. */
export function resolveDuckDuckGoLink(href: string): string | null {
  let link: URL;
  try {
    link = new URL(href, 'https://duckduckgo.com');
  } catch {
    return null;
  }
  if (/(^|\.)duckduckgo\.com$/.test(link.hostname)) {
    if (link.pathname === '/y.js') return null;
    const target = link.searchParams.get('uddg');
    return target && /^https?:\/\//i.test(target) ? target : null;
  }
  return /^https?:$/.test(link.protocol) ? link.href : null;
}

const squash = (text: string | null | undefined) => (text ?? '').replace(/\s+/g, ' ').trim();

export function parseDuckDuckGoHtml(html: string): SearchHit[] {
  const { document } = parseHTML(html) as unknown as { document: ResultElement };
  const hits: SearchHit[] = [];
  for (const result of document.querySelectorAll('.result')) {
    if (/\bresult--ad\b/.test(result.getAttribute('class') ?? '')) continue;
    const anchor = result.querySelector('a.result__a');
    const url = resolveDuckDuckGoLink(anchor?.getAttribute('href') ?? '');
    if (!anchor || !url) continue;
    hits.push({
      title: squash(anchor.textContent),
      url,
      snippet: squash(result.querySelector('.result__snippet')?.textContent),
    });
  }
  if (hits.length === 0 && /anomaly-modal|challenge-form|captcha/i.test(html)) throw new DuckDuckGoBlockedError();
  return hits;
}
