/** `nanobot serve`: the OpenAI-compatible API in the foreground, until SIGINT/SIGTERM. */
import { join } from 'node:path';
import { startApiServer } from '../../api/server.js';
import { createAgent } from '../../app/agent.js';
import { redactingLogger, secretsOf } from '../../security/secrets.js';
import { UserError } from '../../util/errors.js';
import { createLogger } from '../../util/log.js';
import { installLastResort } from '../last-resort.js';
import type { GlobalOptions } from '../main.js';
import { setup } from '../setup.js';

export interface ServeFlags {
  port?: string;
  host?: string;
  timeout?: string;
}

export async function runServe(opts: GlobalOptions & ServeFlags): Promise<void> {
  const { loaded } = await setup(opts);
  const api = loaded.config.api;
  const secrets = secretsOf(loaded.config);
  const log = redactingLogger(createLogger(opts.verbose ? 'debug' : 'info'), () => secrets);
  let stopping: (() => Promise<void>) | undefined;
  const uninstall = installLastResort({
    surface: 'nanobot API',
    log,
    secrets: () => secrets,
    shutdown: () => stopping?.() ?? Promise.resolve(),
  });
  const agent = await createAgent(loaded, { log });
  const server = await startApiServer({
    loop: agent.loop,
    sessions: agent.sessions,
    model: agent.model.model,
    host: opts.host ?? api.host,
    port: opts.port === undefined ? api.port : parseNumber(opts.port, 'port', 65535, 0),
    apiKey: api.apiKey ?? null,
    timeoutS: opts.timeout === undefined ? api.timeout : parseNumber(opts.timeout, 'timeout', 86_400),
    corsOrigins: api.corsOrigins,
    mediaDir: join(loaded.dataDir, 'media', 'api'),
    log,
  });
  log.info(`nanobot API on ${server.url}/v1 (model ${agent.model.model}${api.apiKey ? ', API key required' : ''})`);
  const close = () => server.close().then(() => agent.shutdown());
  stopping = close;
  await new Promise<void>((resolve, reject) => {
    const stop = () => {
      log.info('nanobot API: shutting down');
      close().then(resolve, reject);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  uninstall();
}

/** `min` 0 for a port: `-p 0` picks a free one (the log line names it). */
function parseNumber(text: string, what: string, max: number, min = 1): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UserError(`invalid ${what} "${text}"`, `Give a whole number from ${min} to ${max}.`);
  }
  return value;
}
