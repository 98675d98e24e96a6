/**
 * The page's CSP names the sha256 of each inline script of the index.html actually served (nanobot's built WebUI has
 * two), never 'unsafe-inline', and allows inlined fonts. In Chromium the page's own inline scripts run; a script
 * injected into the page does not.
 */
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { inlineScriptHashes } from '../../../src/channels/websocket/page-csp.js';
import { type StartedChannel, startChannel } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const THEME = "\n      document.documentElement.dataset.theme = 'dark';\n    ";
const LOCALE = "window.__locale = 'de';";
const sha = (body: string) => `'sha256-${createHash('sha256').update(body).digest('base64')}'`;

const PAGE = `<!doctype html><html><head>
  <script>${THEME}</script>
  <SCRIPT type="text/javascript" data-x="1">${LOCALE}</SCRIPT >
  <script type="module" src="/assets/app.js"></script>
  <script>${THEME}</script>
</head><body><div id="root"></div></body></html>`;

const running: StartedChannel[] = [];
afterEach(async () => {
  for (const started of running.splice(0)) await started.channel.stop();
});

async function serve(html: string): Promise<StartedChannel> {
  const dir = await mkdtemp(join(tmpdir(), 'nb-csp-'));
  writeFileSync(join(dir, 'index.html'), html);
  const started = await startChannel({}, { webuiDir: dir });
  running.push(started);
  return started;
}

function directives(csp: string | null): Map<string, string[]> {
  return new Map(
    (csp ?? '').split(';').map((part) => {
      const [name = '', ...values] = part.trim().split(/\s+/);
      return [name, values];
    }),
  );
}

describe('WebUI page CSP', () => {
  it('lists exactly the hashes of the inline scripts of the served page, for GET and HEAD', async () => {
    const started = await serve(PAGE);
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(`${started.url}/`, { method });
      expect(res.status).toBe(200);
      const csp = directives(res.headers.get('content-security-policy'));
      expect(csp.get('script-src')).toEqual(["'self'", sha(THEME), sha(LOCALE)]);
      expect(csp.get('font-src')).toEqual(["'self'", 'data:']);
      expect(csp.get('script-src')).not.toContain("'unsafe-inline'");
      expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
    }
    // A client-side route gets the same page, so the same hashes.
    const route = await fetch(`${started.url}/chat/abc`);
    expect(directives(route.headers.get('content-security-policy')).get('script-src')).toHaveLength(3);
  });

  it('a page without inline scripts allows only its own files', async () => {
    const started = await serve('<html><script src="/assets/a.js"></script></html>');
    const csp = directives((await fetch(`${started.url}/`)).headers.get('content-security-policy'));
    expect(csp.get('script-src')).toEqual(["'self'"]);
    expect(inlineScriptHashes('<script src=x></script><script>a</script><script\nsrc="y">b</script>')).toEqual([
      sha('a'),
    ]);
  });

  it.skipIf(!existsSync(CHROMIUM))('in Chromium: the page’s inline scripts run, an injected one does not', async () => {
    const page = `<!doctype html><html><head><script>document.title = 'ran';</script></head><body>
      <div id="out"></div></body></html>`;
    const started = await serve(page);
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    try {
      const tab = await browser.newPage();
      const violations: string[] = [];
      tab.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
      });
      await tab.goto(`${started.url}/`);
      expect(await tab.title()).toBe('ran');
      expect(violations).toEqual([]);
      // What an attacker's markup would add: an inline script the page did not ship is blocked.
      await tab.evaluate(`{
        const script = document.createElement('script');
        script.textContent = "document.getElementById('out').textContent = 'pwned';";
        document.body.append(script);
      }`);
      expect(await tab.textContent('#out')).toBe('');
      expect(violations.length).toBeGreaterThan(0);
    } finally {
      await browser.close();
    }
  });
});
