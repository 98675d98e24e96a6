/**
 * The SMTP side: replies as plain-text mails in the thread they answer (`Re:` subject, In-Reply-To and
 * References), marked `Auto-Submitted: auto-replied` so other robots do not answer them back (RFC 3834). Files the
 * agent sends ride on the reply that follows them; files without a reply go out in a mail of their own.
 */
import { stat } from 'node:fs/promises';
import type { Transporter } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import { errorMessage, UserError } from '../../util/errors.js';
import { type Logger, logFailure } from '../../util/log.js';
import type { OutgoingFile, ReplyTarget } from '../platform.js';
import { type EmailSettings, ownAddress } from './index.js';

/** The mail a reply answers. */
export interface ThreadInfo {
  address: string;
  subject: string;
  /** Its Message-ID, with brackets. */
  messageId?: string;
  /** Its References header, oldest first. */
  references: string[];
}

export interface OutboxOptions {
  nodemailer: typeof import('nodemailer');
  settings: () => EmailSettings;
  log: Logger;
}

const MAX_THREADS = 2_000;
const MAX_REFERENCES = 20;
/** How long files wait for the reply text they belong to before they are sent alone. */
const FILES_WAIT_MS = 1_500;

export class Outbox {
  private transport?: Transporter<SMTPTransport.SentMessageInfo>;
  private verified = false;
  /** By the id of the mail a reply answers (the chat's `threadId`). */
  private readonly threads = new Map<string, ThreadInfo>();
  /** The latest mail from each address: where a message without a thread id goes. */
  private readonly latest = new Map<string, string>();
  private readonly pendingFiles = new Map<
    string,
    { target: ReplyTarget; files: OutgoingFile[]; timer: NodeJS.Timeout }
  >();

  constructor(private readonly options: OutboxOptions) {}

  /** Sets up SMTP; the first time, also logs in once, so a wrong password shows at startup and not at the first reply. */
  async open(): Promise<void> {
    const settings = this.options.settings();
    const transport = this.options.nodemailer.createTransport({
      host: settings.smtpHost,
      port: settings.smtpPort,
      secure: settings.smtpUseSsl,
      requireTLS: !settings.smtpUseSsl && settings.smtpUseTls,
      auth: { user: settings.smtpUsername, pass: settings.smtpPassword },
      connectionTimeout: 30_000,
      greetingTimeout: 15_000,
      socketTimeout: 60_000,
    });
    if (!this.verified) {
      try {
        await transport.verify();
      } catch (err) {
        transport.close();
        if ((err as { code?: string }).code === 'EAUTH') {
          throw new UserError(
            `The SMTP server ${settings.smtpHost} rejected channels.email.smtpUsername/smtpPassword.`,
            'Check them (Gmail and Outlook want an app password, not the account password).',
          );
        }
        throw new Error(`cannot reach the SMTP server ${settings.smtpHost}:${settings.smtpPort}: ${errorMessage(err)}`);
      }
      this.verified = true;
    }
    this.transport = transport;
  }

  close(): void {
    this.transport?.close();
    this.transport = undefined;
  }

  /** Remembers a received mail, so replies to it (and later messages to its sender) thread under it. */
  remember(threadId: string, thread: ThreadInfo): void {
    this.threads.delete(threadId);
    this.threads.set(threadId, thread);
    this.latest.set(thread.address, threadId);
    if (this.threads.size > MAX_THREADS) {
      const oldest = this.threads.keys().next().value;
      if (oldest !== undefined) this.threads.delete(oldest);
    }
  }

  /** Sends one mail; resolves to its Message-ID ('' when autoReplyEnabled is off and it was a reply). */
  async sendText(target: ReplyTarget, text: string): Promise<string> {
    const settings = this.options.settings();
    const transport = this.transport;
    if (!transport) throw new Error('email is not connected');
    const to = this.recipient(target.chatId, settings);
    const threadId = target.threadId ?? this.latest.get(to);
    const thread = threadId ? this.threads.get(threadId) : undefined;
    if (thread && !settings.autoReplyEnabled) {
      this.options.log.info(`not answering ${to}: channels.email.autoReplyEnabled is false`);
      return '';
    }
    const files = this.takeFiles(to);
    const references = thread?.messageId ? [...thread.references, thread.messageId].slice(-MAX_REFERENCES) : [];
    const info = await transport.sendMail({
      from: settings.fromAddress.trim() || ownAddress(settings),
      to,
      subject: thread ? replySubject(thread.subject, settings.subjectPrefix) : 'Message from nanobot',
      text,
      ...(thread?.messageId ? { inReplyTo: thread.messageId, references } : {}),
      headers: { 'Auto-Submitted': thread ? 'auto-replied' : 'auto-generated', 'X-Auto-Response-Suppress': 'All' },
      attachments: files.map((file) => ({ filename: file.name, path: file.path })),
      disableUrlAccess: true,
    });
    return info.messageId;
  }

  /** Holds a file for the reply text that follows it (ChatChannel sends a message's files before its text). */
  async queueFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const settings = this.options.settings();
    const { size } = await stat(file.path);
    if (size > settings.maxAttachmentSize) {
      throw new Error(
        `${file.name} is ${size} bytes, over channels.email.maxAttachmentSize (${settings.maxAttachmentSize})`,
      );
    }
    const to = this.recipient(target.chatId, settings);
    const pending = this.pendingFiles.get(to);
    if (pending) clearTimeout(pending.timer);
    const files = [...(pending?.files ?? []), file];
    if (files.length > settings.maxAttachmentsPerEmail) {
      throw new Error(`more than channels.email.maxAttachmentsPerEmail (${settings.maxAttachmentsPerEmail}) files`);
    }
    const timer = setTimeout(
      () => void this.sendFilesAlone(to).catch(logFailure(this.options.log, `sending files to ${to} failed`)),
      FILES_WAIT_MS,
    );
    timer.unref();
    this.pendingFiles.set(to, { target, files, timer });
  }

  private takeFiles(to: string): OutgoingFile[] {
    const pending = this.pendingFiles.get(to);
    if (!pending) return [];
    clearTimeout(pending.timer);
    this.pendingFiles.delete(to);
    return pending.files;
  }

  private async sendFilesAlone(to: string): Promise<void> {
    const pending = this.pendingFiles.get(to);
    if (!pending) return;
    const names = pending.files.map((file) => file.name).join(', ');
    try {
      await this.sendText(pending.target, `Attached: ${names}`);
    } catch (err) {
      this.options.log.warn(`sending ${names} to ${to} failed: ${errorMessage(err)}`);
    }
  }

  /** A chat id is the sender's address; a bare name is taken as a user of this mailbox's own domain. */
  private recipient(chatId: string, settings: EmailSettings): string {
    const id = chatId.trim().toLowerCase();
    if (id.includes('@')) return id;
    const domain = ownAddress(settings)?.split('@')[1];
    if (!domain) throw new Error(`cannot send mail to "${chatId}": it is not an address`);
    return `${id}@${domain}`;
  }
}

/** `Re: <subject>`, without stacking `Re: Re:`. */
export function replySubject(subject: string, prefix: string): string {
  const base = subject.replace(/[\r\n]+/g, ' ').trim() || 'your message';
  if (/^re\s*:/i.test(base)) return base;
  return `${prefix || 'Re: '}${base}`;
}
