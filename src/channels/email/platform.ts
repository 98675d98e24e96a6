/**
 * Email as a chat: each sender's address is a direct chat, each mail a message, each reply a mail in the same
 * thread. Before a mail reaches the framework (allowFrom, pairing, the agent) it must pass what email needs on
 * top: not from this mailbox, not automatic or from a list, SPF/DKIM as configured, the sender under the hourly
 * limit, and not unread from long before the channel was first enabled.
 */
import type { Readable } from 'node:stream';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import type {
  ChatPlatform,
  IncomingAttachment,
  IncomingMessage,
  OutgoingFile,
  OutgoingPart,
  PlatformLink,
  ReplyTarget,
} from '../platform.js';
import { authenticationVerdict } from './authentication.js';
import { firstConnectedAt, OLD_MAIL_MARGIN_MS, SenderRateLimit } from './guards.js';
import { type Disposition, Inbox, type InboxMail } from './inbox.js';
import { type EmailSettings, ownAddress, ownAddresses, senderIdOf } from './index.js';
import {
  type AttachmentRef,
  agentText,
  attachmentKind,
  automatedReason,
  type Headers,
  messageIds,
  type PartRef,
  parseHeaders,
  planParts,
  typeAllowed,
  withoutQuotedTail,
} from './message.js';
import { Outbox } from './outbox.js';

export interface EmailPlatformOptions {
  imapflow: typeof import('imapflow');
  nodemailer: typeof import('nodemailer');
  settings: () => EmailSettings;
  dataDir: string;
  log: Logger;
}

export class EmailPlatform implements ChatPlatform {
  private readonly inbox: Inbox;
  private readonly outbox: Outbox;
  private readonly rateLimit: SenderRateLimit;
  private firstConnected?: number;
  private toldAboutOldMail = false;

  constructor(private readonly options: EmailPlatformOptions) {
    this.inbox = new Inbox({ imapflow: options.imapflow, settings: options.settings, log: options.log });
    this.outbox = new Outbox({ nodemailer: options.nodemailer, settings: options.settings, log: options.log });
    this.rateLimit = new SenderRateLimit(() => options.settings().maxRepliesPerSenderPerHour);
  }

  /** Plain text; a mail holds a long reply whole (maxReplyChars), so replies are not split like chat messages. */
  get capabilities(): ChannelCapabilities {
    return {
      maxMessageLength: this.options.settings().maxReplyChars,
      markup: 'plain',
      editMessages: false,
      media: true,
      threads: true,
      buttons: false,
    };
  }

  async connect(link: PlatformLink): Promise<void> {
    const settings = this.options.settings();
    const account = `${settings.imapUsername}@${settings.imapHost}/${settings.imapMailbox}`;
    this.firstConnected ??= await firstConnectedAt(this.options.dataDir, account);
    await this.outbox.open();
    try {
      await this.inbox.open(
        (mail) => this.handle(mail, link),
        (error) => link.failed(error),
      );
    } catch (err) {
      this.outbox.close();
      throw err;
    }
    link.log.info(`reading ${settings.imapMailbox} of ${settings.imapUsername}, answering as ${ownAddress(settings)}`);
    if (!settings.verifySpf && !settings.verifyDkim)
      link.log.warn('verifySpf and verifyDkim are both false: mail with a forged From is read as its sender wrote it');
    else if (settings.trustedAuthservIds.length === 0)
      link.log.info(
        'trustedAuthservIds is empty: the topmost Authentication-Results header is taken as the receiving server’s ' +
          '(set it to your server’s authserv-id, e.g. "mx.google.com", to trust nothing else)',
      );
  }

  async disconnect(): Promise<void> {
    await this.inbox.close();
    this.outbox.close();
  }

  sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    return this.outbox.sendText(target, part.text);
  }

  sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    return this.outbox.queueFile(target, file);
  }

  /** A chat is one address (lower case, as mail from it is filed): that person, with the id allowFrom uses. */
  directChatWith(chatId: string): { id: string; username?: string } | undefined {
    if (!/^[a-z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(chatId)) return undefined;
    const { id, username } = senderOf(chatId, undefined, ownAddress(this.options.settings()));
    return { id, ...(username ? { username } : {}) };
  }

  private async handle(mail: InboxMail, link: PlatformLink): Promise<Disposition> {
    const settings = this.options.settings();
    const sender = mail.envelope.from?.[0];
    const from = sender?.address?.trim().toLowerCase();
    if (!from) {
      this.options.log.info(`mail ${mail.uid} is not answered: it names no sender`);
      return 'skipped';
    }
    if (this.isOld(mail)) return 'left';
    const headers = parseHeaders(mail.headers);
    const id = mail.envelope.messageId ?? `uid-${mail.uidValidity}-${mail.uid}`;
    const refusal = this.refusal(mail, from, id, headers, settings);
    if (refusal) {
      const line = `mail ${mail.uid} from ${from} ${refusal.why}`;
      if (refusal.warn) this.options.log.warn(line);
      else this.options.log.info(line);
      return refusal.disposition;
    }
    const subject = mail.envelope.subject ?? '';
    const plan = planParts(mail.bodyStructure);
    const body = await this.readBody(mail, plan.texts, settings.maxBodyChars);
    const { attachments, notes } = this.attachments(mail, plan.attachments, settings);
    this.outbox.remember(id, {
      address: from,
      subject,
      ...(mail.envelope.messageId ? { messageId: mail.envelope.messageId } : {}),
      references: messageIds(headers.get('references')?.[0]),
    });
    const sent = mail.envelope.date ? new Date(mail.envelope.date) : undefined;
    const date = sent && !Number.isNaN(sent.getTime()) ? sent.toUTCString() : undefined;
    const text = agentText({
      from,
      ...(sender?.name ? { fromName: sender.name } : {}),
      subject,
      ...(date ? { date } : {}),
      body,
    });
    const message: IncomingMessage = {
      id,
      chatId: from,
      sender: senderOf(from, sender?.name, ownAddress(settings)),
      chatType: 'direct',
      text: [text, ...notes].join('\n'),
      threadId: id,
      ...(attachments.length ? { attachments } : {}),
      metadata: { subject, sender_email: from, uid: mail.uid, ...(date ? { date } : {}) },
    };
    await link.receive(message);
    return 'answered';
  }

  /** Why this mail gets no answer (and whether it stays unread), or undefined when it is for the agent. */
  private refusal(
    mail: InboxMail,
    from: string,
    id: string,
    headers: Headers,
    settings: EmailSettings,
  ): { disposition: Disposition; why: string; warn?: boolean } | undefined {
    if (ownAddresses(settings).has(from))
      return { disposition: 'skipped', why: 'is not answered: it was sent from this mailbox' };
    const automated = automatedReason(headers, from, mail.bodyStructure?.type ?? '');
    if (automated) return { disposition: 'skipped', why: `is not answered: ${automated}` };
    const forged = this.unauthenticated(mail, from, headers, settings);
    if (forged) {
      return {
        disposition: 'left',
        warn: true,
        why:
          `is left unread: ${forged}, so it may be forged (channels.email.verifySpf/verifyDkim turn this check off; ` +
          'trustedAuthservIds names your server)',
      };
    }
    if (!this.rateLimit.allow(from, id)) {
      return {
        disposition: 'skipped',
        warn: true,
        why: `is not answered: ${from} had ${settings.maxRepliesPerSenderPerHour} mails answered this hour (channels.email.maxRepliesPerSenderPerHour)`,
      };
    }
    return undefined;
  }

  /** Why the receiving server does not vouch for the From of this mail; undefined when it does or nobody asked. */
  private unauthenticated(
    mail: InboxMail,
    from: string,
    headers: Headers,
    settings: EmailSettings,
  ): string | undefined {
    if (!settings.verifySpf && !settings.verifyDkim) return undefined;
    // Two From headers or addresses: the server may have checked another one than the one read here.
    if ((headers.get('from')?.length ?? 0) !== 1 || (mail.envelope.from?.length ?? 0) !== 1)
      return 'it does not have exactly one From address';
    const verdict = authenticationVerdict(headers.get('authentication-results') ?? [], from, {
      trustedAuthservIds: settings.trustedAuthservIds,
      spf: settings.verifySpf,
      dkim: settings.verifyDkim,
    });
    return verdict.ok ? undefined : verdict.why;
  }

  /** Unread mail from well before the channel was first enabled: an existing inbox is not answered retroactively. */
  private isOld(mail: InboxMail): boolean {
    const received = mail.internalDate?.getTime();
    if (received === undefined || this.firstConnected === undefined) return false;
    if (received >= this.firstConnected - OLD_MAIL_MARGIN_MS) return false;
    if (!this.toldAboutOldMail) {
      this.toldAboutOldMail = true;
      this.options.log.info(
        `unread mail from before the email channel was first enabled (${new Date(this.firstConnected).toISOString()}) is left alone`,
      );
    }
    return true;
  }

  /** The first text part with something in it, as plain text without the quoted conversation, cut at maxChars. */
  private async readBody(mail: InboxMail, parts: PartRef[], maxChars: number): Promise<string> {
    for (const part of parts) {
      let text: string;
      try {
        text = await mail.readText(part.part, maxChars * 4 + 1024);
      } catch (err) {
        this.options.log.warn(`could not read the text of mail ${mail.uid}: ${errorMessage(err)}`);
        continue;
      }
      if (part.html) {
        const { htmlToText } = await import('../../tools/web/extract.js');
        text = htmlToText(text);
      }
      const body = withoutQuotedTail(text.replace(/\r\n/g, '\n'));
      if (!body) continue;
      return body.length > maxChars ? `${body.slice(0, maxChars)}\n[… the rest of the mail was cut]` : body;
    }
    return '';
  }

  /** The attachments to save (type allowed, under the size and count limits) and notes about the others. */
  private attachments(
    mail: InboxMail,
    refs: AttachmentRef[],
    settings: EmailSettings,
  ): { attachments: IncomingAttachment[]; notes: string[] } {
    const attachments: IncomingAttachment[] = [];
    const notes: string[] = [];
    for (const ref of refs) {
      const name = ref.name ?? `${attachmentKind(ref.type)} (${ref.type})`;
      let why: string | undefined;
      if (!typeAllowed(ref.type, settings.allowedAttachmentTypes))
        why = `channels.email.allowedAttachmentTypes does not include ${ref.type}`;
      else if (ref.size !== undefined && ref.size > settings.maxAttachmentSize)
        why = `it is over channels.email.maxAttachmentSize (${settings.maxAttachmentSize} bytes)`;
      else if (attachments.length >= settings.maxAttachmentsPerEmail)
        why = `only ${settings.maxAttachmentsPerEmail} attachments are saved per mail`;
      if (why) {
        notes.push(`[attachment ${name} not saved: ${why}]`);
        continue;
      }
      const limit = settings.maxAttachmentSize;
      attachments.push({
        kind: attachmentKind(ref.type),
        mimeType: ref.type,
        ...(ref.name ? { name: ref.name } : {}),
        ...(ref.size !== undefined ? { size: ref.size } : {}),
        open: async (signal) => capped(await mail.open(ref.part, signal), limit),
      });
    }
    return { attachments, notes };
  }
}

/** The sender's id (see senderIdOf); a user of the mailbox's own domain also has that name as username. */
function senderOf(address: string, name: string | undefined, own: string | undefined): IncomingMessage['sender'] {
  const id = senderIdOf(address, own);
  return { id, ...(id !== address ? { username: id } : {}), ...(name ? { name } : {}) };
}

/** Stops a download that turns out larger than the limit (sizes in BODYSTRUCTURE are only estimates). */
async function* capped(source: AsyncIterable<Uint8Array>, limit: number): AsyncIterable<Uint8Array> {
  let total = 0;
  for await (const chunk of source) {
    total += chunk.byteLength;
    if (total > limit) {
      (source as Partial<Readable>).destroy?.();
      throw new Error(`it is over channels.email.maxAttachmentSize (${limit} bytes)`);
    }
    yield chunk;
  }
}
