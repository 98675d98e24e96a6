/** A gateway with the email channel enabled against a mail world and a fake LLM, in a throwaway data dir. */
import { ImapFlow } from 'imapflow';
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { createLogger } from '../../../src/util/log.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import type { Dovecot } from './dovecot.js';
import { MAIL_PASSWORD } from './dovecot.js';
import { type MailWorld, startMailWorld } from './mail-world.js';

export interface EmailGateway {
  gateway: Gateway;
  world: MailWorld;
  llm: FakeLLM;
  dataDir: string;
  close(): Promise<void>;
}

/** The owner, a user of the bot's domain named in allowFrom. */
export const OWNER = 'owner';

export async function startEmailGateway(
  email: Record<string, unknown> = {},
  world?: MailWorld,
  waitUntilRunning = true,
): Promise<EmailGateway> {
  const mail = world ?? (await startMailWorld());
  const llm = await startFakeLLM();
  // IDLE announces new mail; the polling check stays out of the way unless a test wants it.
  const settings = { ...mail.settings, allowFrom: [`@${OWNER}`], pollIntervalSeconds: 600, ...email };
  const files = await writeChannelConfig('email', llm, settings);
  const gateway = await startChannelGateway(files, process.env.CONTRACT_DEBUG ? { log: createLogger('debug') } : {});
  const run: EmailGateway = {
    gateway,
    world: mail,
    llm,
    dataDir: files.dataDir,
    close: async () => {
      await gateway.shutdown('test end');
      await mail.close();
      await llm.close();
    },
  };
  if (waitUntilRunning) await eventually(async () => expect(await channelState(run)).toBe('running'), 15_000);
  return run;
}

export async function channelState(run: EmailGateway): Promise<string | undefined> {
  return (await healthOf(run.gateway)).channels.email;
}

/** The user turns the fake LLM received, as JSON text (for `toContain`). */
export const userTurns = (run: EmailGateway) =>
  run.llm.requests.map((request) => JSON.stringify((request.body.messages as unknown[] | undefined)?.at(-1)));

/** The bot's own view of its INBOX (or another folder): uids with their flags. */
export async function botFolder(
  dovecot: Dovecot,
  run: EmailGateway,
  folder = 'INBOX',
): Promise<{ uid: number; seen: boolean }[]> {
  const client = new ImapFlow({
    host: '127.0.0.1',
    port: dovecot.port,
    secure: false,
    doSTARTTLS: false,
    auth: { user: run.world.bot, pass: MAIL_PASSWORD },
    logger: false,
  });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.mailboxOpen(folder);
    const messages = await client.fetchAll('1:*', { uid: true, flags: true });
    return messages.map((message) => ({ uid: message.uid, seen: message.flags?.has('\\Seen') ?? false }));
  } catch {
    return [];
  } finally {
    await client.logout().catch(() => client.close());
  }
}
