/**
 * The WebUI page's security headers. Its CSP allows the page's own script files and, by hash, exactly the inline
 * `<script>` blocks of the index.html being served (nanobot's built WebUI sets its theme and language before the app
 * loads with two of them), never 'unsafe-inline': a script injected into the page has no matching hash. Fonts may be
 * the page's own or inlined (`data:`), as the built CSS embeds some.
 */
import { createHash } from 'node:crypto';

/** An inline script: `<script …>body</script>` with no `src` attribute (a script with `src` loads a file). */
const SCRIPT_BLOCK = /<script\b([^>]*)>([\s\S]*?)<\/script\s*>/gi;
const SRC_ATTRIBUTE = /(?:^|\s)src\s*=/i;

/** The CSP source list entries (`'sha256-…'`) for the inline scripts of `html`, each once, in page order. */
export function inlineScriptHashes(html: string): string[] {
  const hashes = new Set<string>();
  for (const [, attributes = '', body = ''] of html.matchAll(SCRIPT_BLOCK)) {
    if (SRC_ATTRIBUTE.test(attributes)) continue;
    hashes.add(`'sha256-${createHash('sha256').update(body, 'utf8').digest('base64')}'`);
  }
  return [...hashes];
}

export function pageSecurityHeaders(html: string): Record<string, string> {
  const scripts = ["'self'", ...inlineScriptHashes(html)].join(' ');
  return {
    'content-security-policy':
      `default-src 'self'; script-src ${scripts}; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; ` +
      "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; " +
      "frame-ancestors 'none'",
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
  };
}
