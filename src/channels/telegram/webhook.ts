/**
 * The HTTP endpoint Telegram posts updates to in webhook mode (usually behind a reverse proxy that terminates TLS).
 * A request must carry the secret token given to setWebhook; updates are acknowledged at once and handled one after
 * another, so a slow download does not make Telegram retry (and a retry is dropped as a duplicate anyway).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Update } from '@grammyjs/types';
import { z } from 'zod';
import { secretMatches } from '../../security/secrets.js';
import { errorMessage } from '../../util/errors.js';
import { parseJsonAs } from '../../util/json.js';
import type { Logger } from '../../util/log.js';

const MAX_BODY_BYTES = 1024 * 1024;

/** What this side relies on: an object with a numeric update_id. The rest is grammy's to read, passed on as sent. */
const UpdateEnvelope = z.looseObject({ update_id: z.int().nonnegative() });

export interface WebhookServerOptions {
  host: string;
  port: number;
  path: string;
  secret: string;
  onUpdate: (update: Update) => Promise<void>;
  log: Logger;
}

export interface WebhookServer {
  port: number;
  close(): Promise<void>;
}

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  let queue: Promise<void> = Promise.resolve();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (req.method !== 'POST' || path !== options.path) return reply(res, 404);
    const given = req.headers['x-telegram-bot-api-secret-token'];
    if (!secretMatches(options.secret, typeof given === 'string' ? given : undefined)) return reply(res, 401);
    readBody(req)
      .then((body) => {
        const parsed = parseJsonAs(body, UpdateEnvelope, 'webhook body');
        if (!parsed.ok) {
          options.log.warn(`${parsed.problem}; refused`);
          return reply(res, 400, parsed.problem);
        }
        const update: Update = parsed.value;
        reply(res, 200);
        queue = queue
          .then(() => options.onUpdate(update))
          .catch((err: unknown) => options.log.warn(`webhook update failed: ${errorMessage(err)}`));
      })
      .catch(() => reply(res, 400));
  });
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function reply(res: http.ServerResponse, status: number, description?: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(status === 200 ? { ok: true } : { ok: false, ...(description ? { description } : {}) }));
}
