/** channels.email checks at startup, and how a mail is read (no servers needed). */
import { describe, expect, it } from 'vitest';
import { emailChannel } from '../../../src/channels/email/index.js';
import {
  agentText,
  automatedReason,
  parseHeaders,
  planParts,
  withoutQuotedTail,
} from '../../../src/channels/email/message.js';
import { replySubject } from '../../../src/channels/email/outbox.js';

const READY = {
  enabled: true,
  consentGranted: true,
  imapHost: 'imap.example.com',
  imapUsername: 'agent@example.com',
  imapPassword: 'secret',
  smtpHost: 'smtp.example.com',
  smtpUsername: 'agent@example.com',
  smtpPassword: 'secret',
};

describe('channels.email settings', () => {
  it('refuses to start without consentGranted, naming the key', () => {
    expect(() => emailChannel.parse({ ...READY, consentGranted: false })).toThrow(/channels\.email\.consentGranted/);
    expect(() => emailChannel.parse(READY)).not.toThrow();
  });

  it('names a missing login and refuses plain SMTP across the network', () => {
    expect(() => emailChannel.parse({ ...READY, imapPassword: '' })).toThrow(
      /channels\.email\.imapPassword is not set/,
    );
    const plain = { ...READY, smtpUseTls: false, smtpUseSsl: false };
    expect(() => emailChannel.parse(plain)).toThrow(/unencrypted/);
    expect(() => emailChannel.parse({ ...plain, smtpHost: '127.0.0.1' })).not.toThrow();
    expect(() => emailChannel.parse({ ...READY, postAction: 'move' })).toThrow(/postActionMoveMailbox/);
  });

  it('reads allowFrom addresses in any case; users of the own domain by name', () => {
    const settings = emailChannel.parse({ ...READY, allowFrom: ['Alice@Example.com', 'Bob@Other.org', '@carol', '*'] });
    expect(settings.allowFrom).toEqual(['alice', 'bob@other.org', '@carol', '*']);
  });
});

describe('reading a mail', () => {
  it('knows mail that must never be answered', () => {
    const reason = (headers: string, from = 'alice@example.com', type = 'text/plain') =>
      automatedReason(parseHeaders(headers), from, type);
    expect(reason('Auto-Submitted: auto-replied\r\n')).toMatch(/automatic/);
    expect(reason('Auto-Submitted: no\r\n')).toBeUndefined();
    expect(reason('Precedence: junk\r\n')).toMatch(/bulk/);
    expect(reason('List-Id: Friends\r\n <friends.example.org>\r\n')).toMatch(/mailing list/);
    expect(reason('Return-Path: <>\r\n')).toMatch(/bounce/);
    expect(reason('', 'MAILER-DAEMON@example.com')).toMatch(/robot/);
    expect(reason('', 'noreply+receipts@shop.example')).toMatch(/robot/);
    expect(reason('', 'alice@example.com', 'multipart/report')).toMatch(/delivery report/);
    expect(reason('Subject: hi\r\n')).toBeUndefined();
  });

  it('drops the quoted conversation under a reply, and keeps quotes that are the message', () => {
    const gmail =
      'Sounds good.\n\nOn Mon, 1 Jan 2026 at 10:00, Nanobot <\nbot@example.com> wrote:\n> Shall we?\n> Yes.\n';
    expect(withoutQuotedTail(gmail)).toBe('Sounds good.');
    const outlook = 'Thanks!\r\n\r\n-----Original Message-----\r\nFrom: Nanobot\r\nSubject: x\r\n\r\nold text';
    expect(withoutQuotedTail(outlook)).toBe('Thanks!');
    expect(withoutQuotedTail('> only a quote\n> nothing else')).toBe('> only a quote\n> nothing else');
    expect(withoutQuotedTail('Look:\n> a quote in the middle\nmy answer')).toBe(
      'Look:\n> a quote in the middle\nmy answer',
    );
  });

  it('prefers the plain-text part and lists attachments', () => {
    const plan = planParts({
      type: 'multipart/mixed',
      childNodes: [
        {
          type: 'multipart/alternative',
          childNodes: [
            { part: '1.1', type: 'text/plain' },
            { part: '1.2', type: 'text/html' },
          ],
        },
        {
          part: '2',
          type: 'application/pdf',
          disposition: 'attachment',
          encoding: 'base64',
          size: 400,
          dispositionParameters: { filename: 'a.pdf' },
        },
        { part: '3', type: 'text/plain', disposition: 'attachment', parameters: { name: 'notes.txt' } },
      ],
    });
    expect(plan.texts).toEqual([
      { part: '1.1', type: 'text/plain', html: false },
      { part: '1.2', type: 'text/html', html: true },
    ]);
    expect(plan.attachments).toEqual([
      { part: '2', type: 'application/pdf', name: 'a.pdf', size: 300 },
      { part: '3', type: 'text/plain', name: 'notes.txt' },
    ]);
    expect(planParts({ type: 'text/html' }).texts).toEqual([{ part: '1', type: 'text/html', html: true }]);
  });

  it('gives the agent the sender and subject, or a slash command alone', () => {
    const text = agentText({ from: 'alice@example.com', fromName: 'Alice', subject: 'Hi', body: 'Hello there' });
    expect(text).toBe('[EMAIL-CONTEXT] Email received.\nFrom: Alice <alice@example.com>\nSubject: Hi\n\nHello there');
    expect(agentText({ from: 'alice@example.com', subject: 'x', body: '/new\n\n-- \nAlice' })).toBe('/new');
  });

  it('prefixes replies with Re: once', () => {
    expect(replySubject('Trip plans', 'Re: ')).toBe('Re: Trip plans');
    expect(replySubject('RE: Trip plans', 'Re: ')).toBe('RE: Trip plans');
    expect(replySubject('', 'Re: ')).toBe('Re: your message');
  });
});
