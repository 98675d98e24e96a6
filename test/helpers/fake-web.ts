/**
 * A loopback HTTP server for the web tools and the network policy: routes by path, records every request (and
 * counts TCP connections, so a test can prove that nothing connected), and ships realistic page fixtures.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** Path + query as sent. */
  path: string;
  url: URL;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface FakeResponse {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export type FakeRoute = FakeResponse | ((request: RecordedRequest) => FakeResponse | Promise<FakeResponse>);

export interface FakeWeb {
  host: string;
  port: number;
  /** `http://host:port` */
  origin: string;
  url(path: string): string;
  requests: RecordedRequest[];
  /** TCP connections accepted so far. */
  connections(): number;
  route(path: string, route: FakeRoute): void;
  close(): Promise<void>;
}

export async function startFakeWeb(
  options: { host?: string; routes?: Record<string, FakeRoute> } = {},
): Promise<FakeWeb> {
  const host = options.host ?? '127.0.0.1';
  const routes = new Map<string, FakeRoute>(Object.entries(options.routes ?? {}));
  const requests: RecordedRequest[] = [];
  let connections = 0;

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', `http://${host}`);
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      url,
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    requests.push(recorded);
    const route = routes.get(url.pathname);
    const reply: FakeResponse = route
      ? typeof route === 'function'
        ? await route(recorded)
        : route
      : { status: 404, body: 'not found' };
    res.writeHead(reply.status ?? 200, { 'content-type': 'text/plain; charset=utf-8', ...reply.headers });
    res.end(reply.body ?? '');
  });
  server.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://${host}:${port}`;

  return {
    host,
    port,
    origin,
    url: (path) => `${origin}${path}`,
    requests,
    connections: () => connections,
    route: (path, route) => {
      routes.set(path, route);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const html = (body: string, status = 200): FakeResponse => ({
  status,
  headers: { 'content-type': 'text/html; charset=utf-8' },
  body,
});

export const json = (value: unknown, status = 200): FakeResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(value),
});

export const redirect = (location: string, status = 302): FakeResponse => ({ status, headers: { location } });

/** A news-site-shaped page: nav, cookie banner, ads, sidebar, the article itself, comments form and footer. */
export const ARTICLE_PAGE_HTML = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Understanding Event Loops in Node.js | DevDaily</title>
  <meta name="description" content="A practical guide to the Node.js event loop.">
  <link rel="stylesheet" href="/static/site.css">
  <script>window.dataLayer = window.dataLayer || []; function gtag(){dataLayer.push(arguments);} gtag('js', new Date());</script>
  <style>.ad-slot { min-height: 250px; } nav a { color: #333; }</style>
</head>
<body class="layout-article">
  <div class="cookie-banner" id="cookie-consent">We use cookies to improve your experience. <button>Accept all</button></div>
  <header class="site-header">
    <a class="logo" href="/">DevDaily</a>
    <nav class="main-nav" role="navigation">
      <ul>
        <li><a href="/">Home</a></li>
        <li><a href="/topics/javascript">JavaScript</a></li>
        <li><a href="/topics/devops">DevOps</a></li>
        <li><a href="/newsletter">Subscribe to our newsletter</a></li>
      </ul>
    </nav>
  </header>
  <div class="ad-slot ad-leaderboard"><a href="https://ads.example.net/click?id=42">SPONSORED: Buy CloudHosting Pro today, 50% off!</a></div>
  <div class="page">
    <main id="content">
      <article class="post">
        <h1>Understanding Event Loops in Node.js</h1>
        <p class="byline">By <a href="/authors/ada">Ada Lovelace</a> · 8 min read</p>
        <p>The event loop is what lets Node.js perform non-blocking I/O even though JavaScript runs on a single thread.
          Work is offloaded to the system kernel whenever possible, and callbacks are queued for execution once the
          operation completes. Understanding the phases of the loop explains many surprising orderings of timers,
          promises and I/O callbacks that trip up even experienced developers.</p>
        <h2>The phases of the loop</h2>
        <p>Each turn of the loop walks through a fixed sequence of phases. The most important ones are listed below,
          and the <a href="/docs/event-loop">official guide</a> describes the rest in detail.</p>
        <ul>
          <li><strong>Timers</strong>: callbacks scheduled by setTimeout and setInterval.</li>
          <li><strong>Poll</strong>: retrieve new I/O events and run their callbacks.</li>
          <li><strong>Check</strong>: setImmediate callbacks run here.</li>
        </ul>
        <h2>Microtasks run between callbacks</h2>
        <p>Promise reactions and queueMicrotask callbacks are not part of any phase. They run as soon as the current
          callback finishes, before the loop moves on, which is why a resolved promise always beats a zero-delay timer.</p>
        <pre><code class="language-js">setTimeout(() =&gt; console.log('timeout'), 0);
Promise.resolve().then(() =&gt; console.log('microtask'));
// prints: microtask, then timeout</code></pre>
        <p>Keeping callbacks short keeps the loop responsive; move heavy CPU work to worker threads instead of blocking
          every other request the process is serving.</p>
      </article>
      <section class="comments">
        <h3>Leave a comment</h3>
        <form action="/comments" method="post"><textarea name="body"></textarea><button>Post comment</button></form>
      </section>
    </main>
    <aside class="sidebar">
      <div class="widget">
        <h3>Trending now</h3>
        <ul>
          <li><a href="/posts/10-vscode-tricks">10 VS Code tricks you did not know</a></li>
          <li><a href="/posts/rust-vs-go">Rust vs Go in 2025</a></li>
        </ul>
      </div>
      <div class="ad-slot ad-sidebar">ADVERTISEMENT: Learn Kubernetes in 24 hours</div>
    </aside>
  </div>
  <footer class="site-footer">
    <p>© 2025 DevDaily Media. All rights reserved.</p>
    <a href="/privacy">Privacy policy</a> · <a href="/terms">Terms of service</a>
  </footer>
  <script src="/static/analytics.js"></script>
</body>
</html>`;

export interface DuckDuckGoFixtureResult {
  title: string;
  url: string;
  snippet: string;
}

/** A page shaped like html.duckduckgo.com/html/ results: an ad first, then organic results behind `/l/?uddg=`. */
export function duckDuckGoResultsHtml(results: DuckDuckGoFixtureResult[]): string {
  const organic = results
    .map(
      (r) => `
    <div class="result results_links results_links_deep web-result">
      <div class="links_main links_deep result__body">
        <h2 class="result__title">
          <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=${encodeURIComponent(r.url)}&amp;rut=abc123">${r.title}</a>
        </h2>
        <div class="result__extras"><div class="result__extras__url"><a class="result__url" href="${r.url}">${r.url}</a></div></div>
        <a class="result__snippet" href="//duckduckgo.com/l/?uddg=${encodeURIComponent(r.url)}">${r.snippet}</a>
      </div>
    </div>`,
    )
    .join('\n');
  return `<!DOCTYPE html><html><head><title>search at DuckDuckGo</title></head><body>
  <div id="links" class="results">
    <div class="result results_links results_links_deep result--ad">
      <div class="links_main links_deep result__body">
        <h2 class="result__title"><a class="result__a" href="https://duckduckgo.com/y.js?ad_domain=ads.example&amp;u3=x">Sponsored thing</a></h2>
        <a class="result__snippet" href="https://duckduckgo.com/y.js?u3=x">Buy now</a>
      </div>
    </div>
    ${organic}
  </div></body></html>`;
}
