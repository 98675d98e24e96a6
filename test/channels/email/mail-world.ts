/**
 * A small mail world for the email channel on 127.0.0.1: the real dovecot (IMAP) plus an in-process smtp-server as
 * the domain's mail server. What anyone sends through it is stamped (Return-Path, Authentication-Results) and
 * appended to the recipient's dovecot INBOX — the full SMTP → IMAP loop. Mail to the users (not to the bot) is
 * read back over IMAP as a mail client would, so tests see decoded text, headers and attachments.
 *
 * The bot reaches IMAP and SMTP through cuttable TCP proxies (`cut` / `restore`), so a test can drop the bot's
 * connections while people keep writing.
 */
import { randomBytes } from 'node:crypto';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { type FetchMessageObject, ImapFlow, type MessageStructureObject } from 'imapflow';
import nodemailer from 'nodemailer';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { type Dovecot, MAIL_PASSWORD, removeDovecot, startDovecot } from './dovecot.js';

export interface OutgoingTestMail {
  /** The sender's name at the world's domain (`alice`) or a full address. */
  from: string;
  /** Who logs in and is the envelope sender, when not `from` (a spoofer writing someone else's From). */
  as?: string;
  subject?: string;
  text?: string;
  html?: string;
  /** The part of the Message-ID before the @ (`<id@domain>`). */
  messageId?: string;
  inReplyTo?: string;
  references?: string[];
  headers?: Record<string, string>;
  attachments?: { filename: string; content: string | Buffer; contentType?: string }[];
}

export interface DeliveredMail {
  to: string;
  from: string;
  subject: string;
  text: string;
  messageId?: string;
  inReplyTo?: string;
  references: string[];
  autoSubmitted?: string;
  attachments: { name: string; type: string; content: Buffer }[];
}

export interface MailWorld {
  domain: string;
  /** The bot's address. */
  bot: string;
  /** `channels.email` keys that point the channel at this world (through the proxies). */
  settings: Record<string, unknown>;
  address(name: string): string;
  /** `name` writes a mail to the bot through the mail server; resolves to its Message-ID. */
  send(mail: OutgoingTestMail): Promise<string>;
  /** Puts a raw mail straight into the bot's INBOX (no server stamps), with an optional arrival time. */
  appendToBot(raw: string, arrived?: Date): Promise<void>;
  /** Mail delivered to `name` so far, in order. */
  mailsTo(name: string): DeliveredMail[];
  /** Mail for `alias@domain` goes to `name`'s mailbox. */
  alias(alias: string, name: string): void;
  /** Drops the bot's IMAP and SMTP connections and refuses new ones until `restore`. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

let shared: Promise<Dovecot> | undefined;

/** One dovecot per test file; each world uses its own domain in it. */
export function sharedDovecot(): Promise<Dovecot> {
  shared ??= startDovecot();
  return shared;
}

export async function stopSharedDovecot(): Promise<void> {
  const running = shared;
  shared = undefined;
  if (running) await removeDovecot(await running.catch(() => undefined));
}

let worlds = 0;

export async function startMailWorld(server?: Dovecot): Promise<MailWorld> {
  const dovecot = server ?? (await sharedDovecot());
  const domain = `w${++worlds}-${randomBytes(3).toString('hex')}.nanobot.test`;
  const address = (name: string) => (name.includes('@') ? name.toLowerCase() : `${name}@${domain}`.toLowerCase());
  const bot = address('bot');
  const aliases = new Map<string, string>();
  const delivered = new Map<string, DeliveredMail[]>();
  const imap = (user: string) =>
    new ImapFlow({
      host: '127.0.0.1',
      port: dovecot.port,
      secure: false,
      doSTARTTLS: false,
      auth: { user, pass: MAIL_PASSWORD },
      logger: false,
    });

  const appendWithRetry = async (mailbox: string, raw: string, arrived?: Date): Promise<number> => {
    // While dovecot restarts, the mail server keeps the mail and tries again, as a real one queues it.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const client = imap(mailbox);
      client.on('error', () => undefined);
      try {
        await client.connect();
        const appended = await client.append('INBOX', raw, [], arrived);
        await client.logout();
        if (!appended) throw new Error('append failed');
        return appended.uid ?? 0;
      } catch (err) {
        client.close();
        if (Date.now() > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  };

  const readBack = async (mailbox: string, uid: number) => {
    const client = imap(mailbox);
    client.on('error', () => undefined);
    await client.connect();
    try {
      await client.mailboxOpen('INBOX');
      const message = await client.fetchOne(
        String(uid),
        { uid: true, envelope: true, bodyStructure: true, headers: ['auto-submitted', 'references'] },
        { uid: true },
      );
      if (!message) throw new Error(`mail ${uid} vanished from ${mailbox}`);
      const download = async (part: string) => {
        const { content } = await client.download(String(uid), part, { uid: true });
        const chunks: Buffer[] = [];
        for await (const chunk of content ?? []) chunks.push(Buffer.from(chunk as Uint8Array));
        return Buffer.concat(chunks);
      };
      const leaves = leavesOf(message.bodyStructure);
      const textPart = leaves.find((node) => node.type === 'text/plain' && node.disposition !== 'attachment');
      const text = textPart ? (await download(textPart.part ?? '1')).toString('utf8') : '';
      const attachments: DeliveredMail['attachments'] = [];
      for (const node of leaves.filter((leaf) => leaf !== textPart)) {
        const name = node.dispositionParameters?.filename ?? node.parameters?.name ?? '';
        attachments.push({ name, type: node.type, content: await download(node.part ?? '1') });
      }
      const list = delivered.get(mailbox) ?? [];
      list.push(describeMail(mailbox, message, text, attachments));
      delivered.set(mailbox, list);
    } finally {
      await client.logout().catch(() => client.close());
    }
  };

  const smtp = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.password === MAIL_PASSWORD) callback(null, { user: auth.username });
      else callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        deliver(session, Buffer.concat(chunks).toString('utf8')).then(
          () => callback(),
          (err: Error) => callback(err),
        );
      });
    },
  });

  const deliver = async (session: SMTPServerSession, raw: string) => {
    const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address.toLowerCase() : '';
    // This server's verdict, as a real MX writes it: a sender who logged in as the envelope address passes SPF and
    // DKIM for that address's domain; DMARC passes when that domain is the From domain.
    const authenticated = typeof session.user === 'string' && session.user.toLowerCase() === mailFrom;
    const senderDomain = mailFrom.slice(mailFrom.lastIndexOf('@') + 1);
    const head = (raw.split(/\r?\n\r?\n/, 1)[0] ?? '').replace(/\r?\n[ \t]+/g, ' ');
    const fromHeader = /^From:.*?([^\s<>@]+@[^\s<>@]+?)>?\s*$/im.exec(head)?.[1] ?? '';
    const fromDomain = fromHeader.slice(fromHeader.lastIndexOf('@') + 1).toLowerCase();
    const verdict = authenticated
      ? `spf=pass smtp.mailfrom=${mailFrom}; dkim=pass header.d=${senderDomain}; dmarc=${senderDomain === fromDomain ? 'pass' : 'fail'}`
      : `spf=fail smtp.mailfrom=${mailFrom}; dkim=none; dmarc=fail`;
    const stamp = `Return-Path: <${mailFrom}>\r\nAuthentication-Results: mx.${domain}; ${verdict} header.from=${fromDomain}\r\n`;
    for (const recipient of session.envelope.rcptTo) {
      const [local = '', host = domain] = recipient.address.toLowerCase().split('@');
      const mailbox = host === domain ? address(aliases.get(local) ?? local) : recipient.address.toLowerCase();
      const uid = await appendWithRetry(mailbox, stamp + raw);
      if (mailbox !== bot) await readBack(mailbox, uid);
    }
  };

  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const smtpPort = portOf(smtp.server);
  const imapProxy = await startProxy(dovecot.port);
  const smtpProxy = await startProxy(smtpPort);

  return {
    domain,
    bot,
    settings: {
      consentGranted: true,
      imapHost: '127.0.0.1',
      imapPort: imapProxy.port,
      imapUsername: bot,
      imapPassword: MAIL_PASSWORD,
      imapUseSsl: false,
      smtpHost: '127.0.0.1',
      smtpPort: smtpProxy.port,
      smtpUsername: bot,
      smtpPassword: MAIL_PASSWORD,
      smtpUseTls: false,
      smtpUseSsl: false,
      fromAddress: `Nanobot <${bot}>`,
    },
    address,
    async send(mail) {
      const from = address(mail.from);
      const login = mail.as ? address(mail.as) : from;
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: smtpPort,
        secure: false,
        ignoreTLS: true,
        auth: { user: login, pass: MAIL_PASSWORD },
      });
      try {
        const info = await transport.sendMail({
          from,
          to: bot,
          envelope: { from: login, to: bot },
          subject: mail.subject ?? 'A question',
          ...(mail.text !== undefined ? { text: mail.text } : {}),
          ...(mail.html !== undefined ? { html: mail.html } : {}),
          ...(mail.messageId ? { messageId: `<${mail.messageId}@${domain}>` } : {}),
          ...(mail.inReplyTo ? { inReplyTo: mail.inReplyTo } : {}),
          ...(mail.references ? { references: mail.references } : {}),
          ...(mail.headers ? { headers: mail.headers } : {}),
          ...(mail.attachments ? { attachments: mail.attachments } : {}),
        });
        return info.messageId;
      } finally {
        transport.close();
      }
    },
    async appendToBot(raw, arrived) {
      await appendWithRetry(bot, raw.replace(/\r?\n/g, '\r\n'), arrived);
    },
    mailsTo: (name) => delivered.get(address(name)) ?? [],
    alias: (alias, name) => {
      aliases.set(alias.toLowerCase(), name.toLowerCase());
    },
    cut: () => {
      imapProxy.cut();
      smtpProxy.cut();
    },
    restore: () => {
      imapProxy.restore();
      smtpProxy.restore();
    },
    async close() {
      await imapProxy.close();
      await smtpProxy.close();
      await new Promise<void>((resolve) => smtp.close(() => resolve()));
    },
  };
}

function describeMail(
  to: string,
  message: FetchMessageObject,
  text: string,
  attachments: DeliveredMail['attachments'],
): DeliveredMail {
  const headers = (message.headers?.toString('utf8') ?? '').replace(/\r?\n[ \t]+/g, ' ');
  const header = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(headers)?.[1]?.trim();
  const envelope = message.envelope;
  return {
    to,
    from: envelope?.from?.[0]?.address?.toLowerCase() ?? '',
    subject: envelope?.subject ?? '',
    text: text.replace(/\r\n/g, '\n').trimEnd(),
    ...(envelope?.messageId ? { messageId: envelope.messageId } : {}),
    ...(envelope?.inReplyTo ? { inReplyTo: envelope.inReplyTo } : {}),
    references: header('references')?.match(/<[^<>\s]+>/g) ?? [],
    ...(header('auto-submitted') ? { autoSubmitted: header('auto-submitted') } : {}),
    attachments,
  };
}

function leavesOf(root: MessageStructureObject | undefined): MessageStructureObject[] {
  if (!root) return [];
  return root.childNodes?.length ? root.childNodes.flatMap(leavesOf) : [root];
}

function portOf(server: Server): number {
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('server is not listening');
  return address.port;
}

/** A TCP proxy on 127.0.0.1 that can drop its connections and refuse new ones. */
async function startProxy(targetPort: number) {
  let cut = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const dropAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    port: portOf(server),
    cut() {
      cut = true;
      dropAll();
    },
    restore() {
      cut = false;
    },
    async close() {
      dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
