/**
 * The local page the browser returns to after signing in (`http://localhost:<port>/auth/callback?code=…&state=…`).
 * Bound to 127.0.0.1 only, answering only a loopback `Host` (DNS rebinding); a request with another sign-in's state
 * is refused and the wait goes on. Text from the query is escaped before it goes into the page.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostHeaderAllowed } from '../../security/hosts.js';
import { secretMatches } from '../../security/secrets.js';
import { OAuthError } from './http.js';

export interface CallbackServer {
  port: number;
  /** Resolves with the authorization code; rejects when the provider reports an error. */
  code: Promise<string>;
  close(): Promise<void>;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title: string, body: string) =>
  `<!doctype html><meta charset="utf-8"><title>${escapeHtml(title)}</title>` +
  `<body style="font-family:sans-serif;margin:3em"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(body)}</p></body>`;

export async function startCallbackServer(port: number, path: string, state: string): Promise<CallbackServer> {
  let settle!: { resolve: (code: string) => void; reject: (error: Error) => void };
  const code = new Promise<string>((resolve, reject) => {
    settle = { resolve, reject };
  });
  // The race in the caller may already be over; an unobserved rejection must not crash the process.
  code.catch(() => undefined);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const reply = (status: number, title: string, body: string) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(page(title, body));
    };
    if (!hostHeaderAllowed(req.headers.host, { bindHost: '127.0.0.1' })) {
      return reply(421, 'Wrong address', 'Open this page through http://localhost or http://127.0.0.1.');
    }
    if (url.pathname !== path) return reply(404, 'Not found', 'This is the nanobot sign-in callback.');
    if (!secretMatches(state, url.searchParams.get('state'))) {
      return reply(400, 'Sign-in not recognised', 'This page belongs to another sign-in attempt. Start it again.');
    }
    const error = url.searchParams.get('error');
    if (error) {
      const detail = url.searchParams.get('error_description') ?? error;
      reply(400, 'Sign-in failed', detail);
      return settle.reject(new OAuthError(`The sign-in was not completed: ${detail}.`));
    }
    const received = url.searchParams.get('code');
    if (!received) return reply(400, 'Sign-in failed', 'The address has no authorization code.');
    reply(200, 'Signed in to nanobot', 'You can close this tab and return to the terminal.');
    settle.resolve(received);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    code,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
