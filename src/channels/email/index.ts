/**
 * The email channel: nanobot's `channels.email` keys (IMAP in, SMTP out) and its registration. imapflow and
 * nodemailer are imported only when the channel starts.
 */
import { z } from 'zod';
import { isLoopbackHost } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import { defineChannel } from '../definition.js';
import { channelSdk, channelSettingsSchema, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, type SetupField } from '../setup.js';
import { normalizeAuthservId } from './authentication.js';

/** allowFrom holds addresses (any case), names of users at the mailbox's own domain, or `*`. */
const allowList = z.array(z.union([z.string(), z.number()]).transform(String)).default([]);

const emailKeys = channelSettingsSchema.extend({
  allowFrom: allowList,
  /** The mailbox owner agreed that nanobot reads this mailbox and answers from it; nothing starts without it. */
  consentGranted: z.boolean().default(false),
  imapHost: z.string().default(''),
  imapPort: z.int().min(1).max(65535).default(993),
  imapUsername: z.string().default(''),
  imapPassword: z.string().default(''),
  imapMailbox: z.string().min(1).default('INBOX'),
  /** Implicit TLS (port 993); when false, STARTTLS is used (and required unless the server is on this machine). */
  imapUseSsl: z.boolean().default(true),
  smtpHost: z.string().default(''),
  smtpPort: z.int().min(1).max(65535).default(587),
  smtpUsername: z.string().default(''),
  smtpPassword: z.string().default(''),
  /** STARTTLS (port 587). */
  smtpUseTls: z.boolean().default(true),
  /** Implicit TLS (port 465). */
  smtpUseSsl: z.boolean().default(false),
  /** The From of replies; default smtpUsername. */
  fromAddress: z.string().default(''),
  /** false: mail still reaches the agent, but nothing is sent back to the people who wrote it. */
  autoReplyEnabled: z.boolean().default(true),
  /** Seconds between mailbox checks besides IMAP IDLE (the only way in when the server has no IDLE). */
  pollIntervalSeconds: z.number().min(1).default(30),
  /** Flag handled mail \Seen (only unseen mail is read). */
  markSeen: z.boolean().default(true),
  /** After handling a mail: move it to `postActionMoveMailbox`, or delete it. */
  postAction: z.enum(['move', 'delete']).nullish(),
  postActionMoveMailbox: z.string().nullish(),
  /** Leave mail that got no answer (automated, mailing lists, the bot's own) where it is. */
  postActionIgnoreSkipped: z.boolean().default(true),
  /** Longest mail body handed to the agent. */
  maxBodyChars: z.int().min(100).default(12_000),
  subjectPrefix: z.string().default('Re: '),
  /**
   * Anti-spoofing: a mail is read only when the receiving server's Authentication-Results vouch for its From
   * domain: `dmarc=pass`, or an aligned `dkim=pass` (verifyDkim) or `spf=pass` (verifySpf). Both false: no check.
   */
  verifyDkim: z.boolean().default(true),
  verifySpf: z.boolean().default(true),
  /**
   * The authserv-id(s) your receiving server writes first in its Authentication-Results (`mx.google.com`): only
   * its header counts. Empty: the topmost header is taken as the server's (right when the server adds one).
   */
  trustedAuthservIds: z
    .array(
      z
        .string()
        .transform(normalizeAuthservId)
        .refine((id) => /^[a-z0-9][a-z0-9._:-]*$/.test(id), {
          message: 'an authserv-id is a host-like name such as "mx.google.com"',
        }),
    )
    .default([]),
  /** MIME types of attachments to save for the agent (`application/pdf`, `image/*`, `*`); empty saves none. */
  allowedAttachmentTypes: z.array(z.string()).default([]),
  /** Bytes, per attachment, both directions. */
  maxAttachmentSize: z.int().min(0).default(2_000_000),
  maxAttachmentsPerEmail: z.int().min(0).default(5),
  /** Mails from one sender answered per hour; more are left unanswered (mail loops, floods). */
  maxRepliesPerSenderPerHour: z.int().min(1).default(20),
  /** Longest reply in one mail; a longer reply goes out as several mails. */
  maxReplyChars: z.int().min(500).default(100_000),
});

export type EmailSettings = z.infer<typeof emailKeys>;

/** The keys, with allowFrom in the form sender ids take (see `senderIdOf`). */
export const emailSettingsSchema: z.ZodType<EmailSettings> = emailKeys.transform((settings) => ({
  ...settings,
  allowFrom: settings.allowFrom.map((entry) => {
    const address = addressOf(entry);
    return address ? senderIdOf(address, ownAddress(settings)) : entry.trim();
  }),
}));

/** A required mailbox credential. */
function mailField(key: string, label: string, help: string, kind: 'string' | 'secret' = 'string'): SetupField {
  return { key, kind, label, help, required: true, credential: true };
}

const SETUP_HINT =
  'Use a mailbox made for the agent; set channels.email.imapHost/imapUsername/imapPassword and ' +
  'smtpHost/smtpUsername/smtpPassword (for Gmail: an app password), then consentGranted: true.';

export const emailChannel = defineChannel<EmailSettings>({
  name: 'email',
  displayName: 'Email',
  schema: emailSettingsSchema,
  setup: {
    officialUrl: 'https://support.google.com/accounts/answer/185833',
    fields: [
      {
        key: 'consentGranted',
        kind: 'bool',
        label: 'Mailbox owner agrees',
        help: 'nanobot reads every new mail in this mailbox and answers from it: turn on once the owner agreed.',
        required: true,
        defaultValue: false,
      },
      mailField('imapHost', 'IMAP server', 'The incoming mail server, e.g. imap.gmail.com.'),
      { key: 'imapPort', kind: 'int', label: 'IMAP port', help: '993 for implicit TLS.', defaultValue: 993 },
      mailField('imapUsername', 'IMAP username', 'Usually the mail address.'),
      mailField('imapPassword', 'IMAP password', 'For Gmail: an app password.', 'secret'),
      mailField('smtpHost', 'SMTP server', 'The outgoing mail server, e.g. smtp.gmail.com.'),
      { key: 'smtpPort', kind: 'int', label: 'SMTP port', help: '587 for STARTTLS, 465 for TLS.', defaultValue: 587 },
      mailField('smtpUsername', 'SMTP username', 'Usually the mail address.'),
      mailField('smtpPassword', 'SMTP password', 'For Gmail: an app password.', 'secret'),
      {
        key: 'fromAddress',
        kind: 'string',
        label: 'From address',
        help: 'The From of replies; empty: the SMTP username.',
      },
      {
        key: 'pollIntervalSeconds',
        kind: 'int',
        label: 'Check every (s)',
        help: 'Seconds between mailbox checks besides IMAP IDLE.',
        defaultValue: 30,
      },
      { ...allowFromField, help: 'Addresses that may write to the agent, comma-separated; * lets everyone in.' },
      {
        key: 'verifyDkim',
        kind: 'bool',
        label: 'Require DKIM',
        help: 'Read mail only when DKIM vouches for its sender.',
        defaultValue: true,
      },
      {
        key: 'verifySpf',
        kind: 'bool',
        label: 'Require SPF',
        help: 'Read mail only when SPF vouches for its sender.',
        defaultValue: true,
      },
    ],
  } satisfies ChannelSetup,
  setupHint: SETUP_HINT,
  validate(settings) {
    if (!settings.consentGranted) {
      throw new UserError(
        'channels.email.consentGranted is not true, so the email channel does not start.',
        'nanobot reads every new mail in that mailbox and answers from it: set consentGranted to true once the ' +
          'mailbox owner agreed.',
      );
    }
    for (const key of ['imapHost', 'imapUsername', 'imapPassword', 'smtpHost', 'smtpUsername', 'smtpPassword'] as const)
      requireSetting('email', key, settings[key], SETUP_HINT);
    if (!ownAddress(settings))
      throw new UserError(
        'channels.email.fromAddress is not set and smtpUsername is not an email address, so replies have no sender.',
        'Set channels.email.fromAddress to the mailbox address, e.g. "agent@example.com".',
      );
    if (settings.postAction === 'move' && !settings.postActionMoveMailbox?.trim())
      throw new UserError('channels.email.postAction is "move" but postActionMoveMailbox names no folder.');
    if (!settings.smtpUseSsl && !settings.smtpUseTls && !isLoopbackHost(settings.smtpHost))
      throw new UserError(
        `channels.email.smtpUseTls and smtpUseSsl are both false: the SMTP password would cross the network unencrypted.`,
        'Plain SMTP is accepted only for a server on this machine (127.0.0.1/localhost); use smtpUseTls (587) or smtpUseSsl (465).',
      );
  },
  async createPlatform(settings, context) {
    const imapflow = await channelSdk('email', 'Email', 'imapflow', () => import('imapflow'));
    const nodemailer = await channelSdk('email', 'Email', 'nodemailer', () => import('nodemailer'));
    const { EmailPlatform } = await import('./platform.js');
    return new EmailPlatform({ imapflow, nodemailer, settings, dataDir: context.dataDir, log: context.log });
  },
});

/** The mailbox's own address: replies come from it and mail from it is never answered. */
export function ownAddress(settings: EmailSettings): string | undefined {
  return [settings.fromAddress, settings.smtpUsername, settings.imapUsername]
    .map((value) => addressOf(value))
    .find((address) => address !== undefined);
}

/** Every address of this mailbox (From, SMTP and IMAP logins), lower case. */
export function ownAddresses(settings: EmailSettings): Set<string> {
  const all = [settings.fromAddress, settings.smtpUsername, settings.imapUsername].map((value) => addressOf(value));
  return new Set(all.filter((address): address is string => address !== undefined));
}

/** `Agent <agent@example.com>` or `agent@example.com` → `agent@example.com`; undefined when it is no address. */
export function addressOf(value: string): string | undefined {
  const bracketed = /<([^<>\s]+@[^<>\s]+)>/.exec(value)?.[1];
  const address = (bracketed ?? value).trim().toLowerCase();
  return /^[^@\s]+@[^@\s]+\.[^@\s]+$|^[^@\s]+@localhost$/.test(address) ? address : undefined;
}

/**
 * A sender's id: the address, or for users of the mailbox's own domain just the name before the @ (like accounts
 * on one server: `alice` is alice@<own domain>). Addresses are compared in lower case.
 */
export function senderIdOf(address: string, own: string | undefined): string {
  const lower = address.toLowerCase();
  const at = lower.lastIndexOf('@');
  const ownDomain = own?.slice(own.lastIndexOf('@') + 1);
  return at > 0 && lower.slice(at + 1) === ownDomain ? lower.slice(0, at) : lower;
}
