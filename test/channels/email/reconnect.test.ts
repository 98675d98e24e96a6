/**
 * The email channel's connection to a real dovecot: an admin kicking the session, dovecot restarting while people
 * keep writing, and a server without IDLE (the polling check finds new mail).
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../contract.js';
import { DOVECOT, type Dovecot, removeDovecot, startDovecot } from './dovecot.js';
import { type EmailGateway, OWNER, startEmailGateway } from './helpers.js';
import { sharedDovecot, startMailWorld, stopSharedDovecot } from './mail-world.js';

const open: EmailGateway[] = [];
const servers: Dovecot[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
  for (const server of servers.splice(0)) await removeDovecot(server);
});
afterAll(() => stopSharedDovecot());

async function start(email: Record<string, unknown> = {}, server?: Dovecot) {
  const run = await startEmailGateway(email, await startMailWorld(server));
  open.push(run);
  return run;
}

const texts = (run: EmailGateway) => run.world.mailsTo(OWNER).map((mail) => mail.text);

interface Health {
  state: string;
  restarts: number;
  error?: string;
}

async function health(run: EmailGateway): Promise<Health> {
  const res = await fetch(`http://127.0.0.1:${run.gateway.port}/health`);
  const body = (await res.json()) as { channelDetails: Record<string, Health> };
  return body.channelDetails.email ?? { state: 'missing', restarts: 0 };
}

describe.skipIf(!DOVECOT)('email connection', () => {
  it('reconnects when the server closes the session and answers mail as before', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'before' }, { text: 'after' });
    await run.world.send({ from: OWNER, text: 'one' });
    await eventually(() => expect(texts(run)).toEqual(['before']));

    (await sharedDovecot()).kick(run.world.bot);
    await eventually(async () => expect((await health(run)).restarts).toBeGreaterThanOrEqual(1), 10_000);
    await run.world.send({ from: OWNER, text: 'two' });
    await eventually(() => expect(texts(run)).toEqual(['before', 'after']), 10_000);
    expect((await health(run)).state).toBe('running');
  });

  it('survives a dovecot restart and reads the mail that arrived while it was down', async () => {
    const dovecot = await sharedDovecot();
    const run = await start();
    run.llm.enqueue({ text: 'while you were away' });
    await dovecot.stop();
    await eventually(async () => expect((await health(run)).state).not.toBe('running'), 10_000);
    // The mail server holds the mail until dovecot is back, as a real one queues it.
    const sending = run.world.send({ from: OWNER, text: 'written during the outage' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    await dovecot.start();
    await sending;
    await eventually(() => expect(texts(run)).toEqual(['while you were away']), 15_000);
    expect(JSON.stringify(run.llm.requests[0]?.body.messages)).toContain('written during the outage');
    await eventually(async () => expect((await health(run)).state).toBe('running'));
  });

  it('stops with a clear error, not endless retries, when the server refuses the password', async () => {
    const run = await startEmailGateway({ imapPassword: 'wrong' }, await startMailWorld(), false);
    open.push(run);
    await eventually(async () => expect((await health(run)).state).toBe('error'), 10_000);
    expect((await health(run)).error).toMatch(/rejected channels\.email\.imapUsername\/imapPassword/);
    expect((await health(run)).restarts).toBe(0);
  });

  it('finds new mail by polling on a server without IDLE', async () => {
    const server = await startDovecot({ withoutIdle: true });
    servers.push(server);
    const run = await start({ pollIntervalSeconds: 1 }, server);
    run.llm.enqueue({ text: 'polled' });
    await run.world.send({ from: OWNER, text: 'anyone there?' });
    await eventually(() => expect(texts(run)).toEqual(['polled']), 10_000);
  });
});
