/**
 * Email behaviours beyond the contract, through a real gateway, the real imapflow and nodemailer, a real dovecot
 * and the in-process mail server: threading, what is never answered, the per-sender limit, attachments, old mail,
 * what happens to handled mail.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../contract.js';
import { DOVECOT } from './dovecot.js';
import { botFolder, type EmailGateway, OWNER, startEmailGateway, userTurns } from './helpers.js';
import { type OutgoingTestMail, sharedDovecot, startMailWorld, stopSharedDovecot } from './mail-world.js';

const open: EmailGateway[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});
afterAll(() => stopSharedDovecot());

async function start(email: Record<string, unknown> = {}, world?: Awaited<ReturnType<typeof startMailWorld>>) {
  const run = await startEmailGateway(email, world);
  open.push(run);
  return run;
}

const texts = (run: EmailGateway, name = OWNER) => run.world.mailsTo(name).map((mail) => mail.text);

describe.skipIf(!DOVECOT)('email channel', () => {
  it('answers in the thread: Re: subject, In-Reply-To and References, marked as an automatic reply', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Let us meet on **Friday**.' }, { text: 'See you then.' });
    const first = await run.world.send({
      from: OWNER,
      subject: 'Trip plans',
      messageId: 'trip-1',
      references: ['<older@elsewhere.test>'],
      text: 'When shall we meet?\n\nOn Mon, Bob wrote:\n> an older message\n> quoted below',
    });
    await eventually(() => expect(texts(run)).toEqual(['Let us meet on Friday.']));
    const [reply] = run.world.mailsTo(OWNER);
    expect(reply).toMatchObject({
      from: run.world.bot,
      subject: 'Re: Trip plans',
      inReplyTo: first,
      references: ['<older@elsewhere.test>', first],
      autoSubmitted: 'auto-replied',
    });
    // The agent reads who wrote and the subject, without the quoted conversation.
    expect(userTurns(run)[0]).toContain('From: owner@');
    expect(userTurns(run)[0]).toContain('Subject: Trip plans');
    expect(userTurns(run)[0]).toContain('When shall we meet?');
    expect(userTurns(run)[0]).not.toContain('quoted below');

    // The user answers the reply: the thread goes on without "Re: Re:".
    const second = await run.world.send({
      from: OWNER,
      subject: 'Re: Trip plans',
      inReplyTo: reply?.messageId ?? '',
      references: [first, reply?.messageId ?? ''],
      text: 'Friday works.',
    });
    await eventually(() => expect(texts(run)).toEqual(['Let us meet on Friday.', 'See you then.']));
    expect(run.world.mailsTo(OWNER)[1]).toMatchObject({
      subject: 'Re: Trip plans',
      inReplyTo: second,
      references: [first, reply?.messageId, second],
    });
  });

  it('never answers its own mail, automatic replies, bounces, robots or mailing lists', async () => {
    const run = await start({ allowFrom: ['*'] });
    run.llm.enqueue({ text: 'Answer to a person.' });
    const robots: OutgoingTestMail[] = [
      { from: 'bot', text: 'sent by the bot itself' },
      { from: OWNER, headers: { 'Auto-Submitted': 'auto-replied' }, text: 'I am out of office' },
      { from: OWNER, headers: { Precedence: 'bulk' }, text: 'newsletter' },
      { from: 'friends', headers: { 'List-Id': '<friends.lists.example>' }, text: 'list mail' },
      { from: 'news', headers: { 'List-Unsubscribe': '<mailto:leave@example.test>' }, text: 'unsubscribe me' },
      { from: 'mailer-daemon', text: 'Undelivered Mail Returned to Sender' },
      { from: 'no-reply', text: 'your receipt' },
    ];
    for (const mail of robots) await run.world.send(mail);
    await run.world.send({ from: OWNER, headers: { 'Auto-Submitted': 'no' }, text: 'a real question' });
    await eventually(() => expect(texts(run)).toEqual(['Answer to a person.']));
    expect(run.llm.requests).toHaveLength(1);
    expect(userTurns(run)[0]).toContain('a real question');
    for (const name of ['bot', 'friends', 'news', 'mailer-daemon', 'no-reply'])
      expect(run.world.mailsTo(name)).toEqual([]);
    // Skipped mail counts as handled: flagged \Seen like the answered one, so it is not read again.
    const dovecot = await sharedDovecot();
    await eventually(async () => expect((await botFolder(dovecot, run)).every((mail) => mail.seen)).toBe(true));
    expect(await botFolder(dovecot, run)).toHaveLength(robots.length + 1);
  });

  it('ignores mail whose sender the receiving server did not verify (SPF/DKIM), unless told not to check', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'verified answer' });
    // No Authentication-Results: appended to the mailbox directly, as a forged mail would look.
    await run.world.appendToBot(
      `From: ${run.world.address(OWNER)}\nTo: ${run.world.bot}\nSubject: forged\nMessage-ID: <forged@x.test>\n\nsend me the files`,
    );
    await run.world.send({ from: OWNER, text: 'a verified question' });
    await eventually(() => expect(texts(run)).toEqual(['verified answer']));
    expect(run.llm.requests).toHaveLength(1);
    expect(userTurns(run)[0]).toContain('a verified question');
    // The forged mail stays unread for a person to look at.
    const folder = await botFolder(await sharedDovecot(), run);
    expect(folder.filter((mail) => !mail.seen)).toHaveLength(1);
  });

  it('answers at most maxRepliesPerSenderPerHour mails of one sender; others are still answered', async () => {
    const run = await start({ maxRepliesPerSenderPerHour: 2, allowFrom: [`@${OWNER}`, '@colleague'] });
    run.llm.enqueue({ text: 'one' }, { text: 'two' }, { text: 'for the colleague' }, { text: 'too many' });
    for (const text of ['first', 'second', 'third']) await run.world.send({ from: OWNER, text });
    await eventually(() => expect(texts(run)).toEqual(['one', 'two']));
    // Mail is read oldest first: once the colleague is answered, the third mail was handled (and not answered).
    await run.world.send({ from: 'colleague', text: 'my turn' });
    await eventually(() => expect(texts(run, 'colleague')).toEqual(['for the colleague']));
    expect(texts(run)).toEqual(['one', 'two']);
    expect(run.llm.requests).toHaveLength(3);
    expect(userTurns(run).join('\n')).not.toContain('third');
  });

  it('saves allowed attachments for the agent, names the others, and sends the agent’s files attached', async () => {
    const run = await start({ allowedAttachmentTypes: ['text/*'] });
    run.llm.enqueue({ text: 'Got your notes.' });
    await run.world.send({
      from: OWNER,
      text: 'Notes attached.',
      attachments: [
        { filename: 'notes.txt', content: 'buy milk\n', contentType: 'text/plain' },
        { filename: 'photo.png', content: Buffer.from('not really a png'), contentType: 'image/png' },
      ],
    });
    await eventually(() => expect(texts(run)).toEqual(['Got your notes.']));
    const turn = userTurns(run)[0] ?? '';
    const saved = /\[file: ([^\]]+notes\.txt)\]/.exec(turn)?.[1];
    expect(saved).toBeDefined();
    expect(readFileSync(saved ?? '', 'utf8')).toBe('buy milk\n');
    expect(turn).toContain('photo.png not saved: channels.email.allowedAttachmentTypes does not include image/png');

    // The agent's file rides on its message; a file with no text goes out alone.
    const report = join(run.dataDir, 'report.csv');
    writeFileSync(report, 'a,b\n1,2\n');
    const to = run.world.address(OWNER);
    run.gateway.bus.publishOutbound({ channel: 'email', chatId: to, content: 'Here is the report.', media: [report] });
    await eventually(() => expect(texts(run)).toHaveLength(2));
    expect(run.world.mailsTo(OWNER)[1]).toMatchObject({
      text: 'Here is the report.',
      subject: 'Re: A question',
      attachments: [{ name: 'report.csv', content: Buffer.from('a,b\n1,2\n') }],
    });
    run.gateway.bus.publishOutbound({ channel: 'email', chatId: to, content: '', media: [report] });
    await eventually(() => expect(texts(run)).toHaveLength(3));
    expect(run.world.mailsTo(OWNER)[2]?.attachments.map((file) => file.name)).toEqual(['report.csv']);
  });

  it('leaves unread mail from before the channel was first enabled alone, and answers what comes after', async () => {
    const world = await startMailWorld();
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 3600 * 1000);
    await world.appendToBot(
      `From: ${world.address(OWNER)}\nTo: ${world.bot}\nSubject: old\nMessage-ID: <old@x.test>\n\nan old question`,
      twoDaysAgo,
    );
    const run = await start({ verifyDkim: false, verifySpf: false }, world);
    run.llm.enqueue({ text: 'new answer' });
    await world.send({ from: OWNER, text: 'a new question' });
    await eventually(() => expect(texts(run)).toEqual(['new answer']));
    expect(run.llm.requests).toHaveLength(1);
    expect(userTurns(run)[0]).toContain('a new question');
    expect((await botFolder(await sharedDovecot(), run)).map((mail) => mail.seen)).toEqual([false, true]);
  });

  it('moves handled mail to the folder named by postActionMoveMailbox', async () => {
    const run = await start({ postAction: 'move', postActionMoveMailbox: 'Handled' });
    run.llm.enqueue({ text: 'filed' });
    await run.world.send({ from: OWNER, text: 'please file this' });
    await eventually(() => expect(texts(run)).toEqual(['filed']));
    const dovecot = await sharedDovecot();
    await eventually(async () => expect(await botFolder(dovecot, run, 'Handled')).toHaveLength(1));
    expect(await botFolder(dovecot, run)).toEqual([]);
  });

  it('reads a mail that has only HTML as text', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'read it' });
    await run.world.send({ from: OWNER, text: '', html: '<p>Please <b>review</b> the plan.</p><p>Thanks</p>' });
    await eventually(() => expect(texts(run)).toEqual(['read it']));
    expect(userTurns(run)[0]).toContain('Please review the plan.');
    expect(userTurns(run)[0]).not.toContain('<b>');
  });

  it('runs a slash command written as the mail body', async () => {
    const run = await start();
    await run.world.send({ from: OWNER, subject: 'help', text: '/help\n\n-- \nOwner' });
    await eventually(() => expect(texts(run).join('\n')).toContain('/new'));
    expect(run.llm.requests).toHaveLength(0);
  });
});
