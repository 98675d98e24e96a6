/**
 * The IMAP side: one imapflow connection to the configured folder. New mail is noticed by IMAP IDLE (imapflow
 * idles whenever the connection is quiet) and by a check every `pollIntervalSeconds` (the only way on servers
 * without IDLE, and a liveness check on the others). Each check reads the UNSEEN mail not handled yet, oldest
 * first; handled mail is flagged \Seen, moved or deleted as configured. A lost connection is reported, and the
 * next connection starts with the same check, so mail that arrived meanwhile is read then.
 */
import type { FetchMessageObject, ImapFlow, MessageStructureObject } from 'imapflow';
import { isLoopbackHost } from '../../security/hosts.js';
import { errorMessage, UserError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { EmailSettings } from './index.js';
import { HEADERS_READ } from './message.js';

/** What became of a mail: answered (handed to the agent), skipped (never to be answered), left (untouched). */
export type Disposition = 'answered' | 'skipped' | 'left';

export interface InboxMail {
  uid: number;
  uidValidity: string;
  envelope: NonNullable<FetchMessageObject['envelope']>;
  bodyStructure?: MessageStructureObject;
  internalDate?: Date;
  headers?: Buffer;
  /** A text part as UTF-8, at most `maxBytes` of it. */
  readText(part: string, maxBytes: number): Promise<string>;
  /** A part's decoded bytes (attachments). */
  open(part: string, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>>;
}

export interface InboxOptions {
  imapflow: typeof import('imapflow');
  settings: () => EmailSettings;
  log: Logger;
}

const FETCH_BATCH = 100;
const MAX_REMEMBERED_UIDS = 50_000;

export class Inbox {
  private client?: ImapFlow;
  private closing = false;
  private timer?: NodeJS.Timeout;
  private scanning?: Promise<void>;
  private rescan = false;
  private handle: (mail: InboxMail) => Promise<Disposition> = async () => 'left';
  private lost: (error: Error) => void = () => undefined;
  /** UIDs handled in this folder, kept across reconnects (with markSeen off, UNSEEN still lists them). */
  private readonly handled = new Set<number>();
  private uidValidity?: bigint;

  constructor(private readonly options: InboxOptions) {}

  /** Connects, opens the folder and starts reading; resolves once the folder is open. */
  async open(handle: (mail: InboxMail) => Promise<Disposition>, lost: (error: Error) => void): Promise<void> {
    const settings = this.options.settings();
    this.handle = handle;
    this.lost = lost;
    this.closing = false;
    const client = new this.options.imapflow.ImapFlow({
      host: settings.imapHost,
      port: settings.imapPort,
      secure: settings.imapUseSsl,
      // Without implicit TLS the password must still not cross the network in clear text.
      ...(settings.imapUseSsl || isLoopbackHost(settings.imapHost) ? {} : { doSTARTTLS: true }),
      auth: { user: settings.imapUsername, pass: settings.imapPassword },
      logger: false,
      // Idle soon after each check, so new mail is announced within a second or so.
      autoIdleDelay: 1_000,
      connectionTimeout: 30_000,
    });
    client.on('error', (err: Error) => this.options.log.debug(`IMAP: ${errorMessage(err)}`));
    try {
      await client.connect();
    } catch (err) {
      client.close();
      if ((err as { authenticationFailed?: boolean }).authenticationFailed) {
        throw new UserError(
          `The IMAP server ${settings.imapHost} rejected channels.email.imapUsername/imapPassword.`,
          'Check them (Gmail and Outlook want an app password, not the account password).',
        );
      }
      throw new Error(`cannot reach the IMAP server ${settings.imapHost}:${settings.imapPort}: ${describe(err)}`);
    }
    await this.openFolder(client, settings);
    client.on('exists', () => this.requestScan());
    client.on('close', () => {
      if (this.client === client && !this.closing) this.lost(new Error('the IMAP connection was closed'));
    });
    this.client = client;
    this.timer = setInterval(() => this.requestScan(), settings.pollIntervalSeconds * 1000);
    this.timer.unref();
    this.requestScan();
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    const client = this.client;
    this.client = undefined;
    if (client?.usable) await withTimeout(client.logout(), 2_000).catch(() => undefined);
    client?.close();
    await withTimeout(this.scanning ?? Promise.resolve(), 5_000).catch(() => undefined);
  }

  private async openFolder(client: ImapFlow, settings: EmailSettings): Promise<void> {
    try {
      const mailbox = await client.mailboxOpen(settings.imapMailbox);
      if (this.uidValidity !== undefined && mailbox.uidValidity !== this.uidValidity) this.handled.clear();
      this.uidValidity = mailbox.uidValidity;
    } catch (err) {
      client.close();
      if (/NONEXISTENT|doesn't exist|does not exist|no such mailbox/i.test(describe(err))) {
        throw new UserError(
          `The mail folder channels.email.imapMailbox "${settings.imapMailbox}" does not exist on ${settings.imapHost}.`,
        );
      }
      throw new Error(`cannot open the mail folder ${settings.imapMailbox}: ${describe(err)}`);
    }
    const target = settings.postAction === 'move' ? settings.postActionMoveMailbox?.trim() : undefined;
    if (target) {
      await client.mailboxCreate(target).catch((err: unknown) => {
        if (!/ALREADYEXISTS|already exists/i.test(describe(err)))
          this.options.log.warn(`could not create the folder ${target} for handled mail: ${describe(err)}`);
      });
    }
  }

  /** Runs a check now, or right after the one that is running. */
  private requestScan(): void {
    const client = this.client;
    if (!client || this.closing) return;
    if (this.scanning) {
      this.rescan = true;
      return;
    }
    let run: Promise<void> | undefined;
    run = (async () => {
      try {
        do {
          this.rescan = false;
          await this.scan(client);
        } while (this.rescan && this.client === client && !this.closing);
      } catch (err) {
        if (this.client === client && !this.closing)
          this.lost(new Error(`reading the mailbox failed: ${describe(err)}`));
      } finally {
        if (this.scanning === run) this.scanning = undefined;
        // A check asked for on a newer connection while this one was finishing.
        if (this.rescan && this.client !== client) this.requestScan();
      }
    })();
    this.scanning = run;
  }

  private async scan(client: ImapFlow): Promise<void> {
    // A NOOP first: dovecot's SEARCH in a selected session sees mail that others delivered only after a sync.
    await client.noop();
    const found = await client.search({ seen: false }, { uid: true });
    const uids = (found || []).filter((uid) => !this.handled.has(uid)).sort((a, b) => a - b);
    for (let start = 0; start < uids.length; start += FETCH_BATCH) {
      const batch = uids.slice(start, start + FETCH_BATCH);
      const messages = await client.fetchAll(
        batch.join(','),
        { uid: true, envelope: true, bodyStructure: true, internalDate: true, headers: HEADERS_READ },
        { uid: true },
      );
      for (const message of messages.sort((a, b) => a.uid - b.uid)) {
        if (this.client !== client || this.closing) return;
        let disposition: Disposition = 'left';
        try {
          disposition = await this.handle(this.mailOf(client, message));
        } catch (err) {
          this.options.log.warn(`mail ${message.uid} could not be handled: ${errorMessage(err)}`);
        }
        this.remember(message.uid);
        await this.settle(client, message.uid, disposition);
      }
    }
  }

  /** \Seen, then the post action: answered mail always, skipped mail unless postActionIgnoreSkipped. */
  private async settle(client: ImapFlow, uid: number, disposition: Disposition): Promise<void> {
    if (disposition === 'left') return;
    const settings = this.options.settings();
    const range = String(uid);
    try {
      if (settings.markSeen) await client.messageFlagsAdd(range, ['\\Seen'], { uid: true });
      if (disposition === 'skipped' && settings.postActionIgnoreSkipped) return;
      const target = settings.postActionMoveMailbox?.trim();
      if (settings.postAction === 'move' && target) await client.messageMove(range, target, { uid: true });
      else if (settings.postAction === 'delete') await client.messageDelete(range, { uid: true });
    } catch (err) {
      this.options.log.warn(`could not mark mail ${uid} as handled: ${describe(err)}`);
    }
  }

  private remember(uid: number): void {
    this.handled.add(uid);
    if (this.handled.size <= MAX_REMEMBERED_UIDS) return;
    const oldest = this.handled.values().next().value;
    if (oldest !== undefined) this.handled.delete(oldest);
  }

  private mailOf(client: ImapFlow, message: FetchMessageObject): InboxMail {
    const uid = String(message.uid);
    return {
      uid: message.uid,
      uidValidity: String(this.uidValidity ?? ''),
      envelope: message.envelope ?? {},
      ...(message.bodyStructure ? { bodyStructure: message.bodyStructure } : {}),
      ...(message.internalDate ? { internalDate: new Date(message.internalDate) } : {}),
      ...(message.headers ? { headers: message.headers } : {}),
      readText: async (part, maxBytes) => {
        const { content } = await client.download(uid, part, { uid: true, maxBytes });
        if (!content) return '';
        const chunks: Buffer[] = [];
        for await (const chunk of content) chunks.push(Buffer.from(chunk as Uint8Array));
        return Buffer.concat(chunks).toString('utf8');
      },
      open: async (part, signal) => {
        const { content } = await client.download(uid, part, { uid: true });
        if (!content) throw new Error('the mail is no longer in the folder');
        signal.addEventListener('abort', () => content.destroy(), { once: true });
        return content as AsyncIterable<Uint8Array>;
      },
    };
  }
}

/** imapflow errors carry the server's answer separately from the message. */
function describe(err: unknown): string {
  const extra = err as { responseText?: string; serverResponseCode?: string; code?: string };
  const detail = [extra.serverResponseCode, extra.responseText].filter(Boolean).join(' ');
  return detail ? `${errorMessage(err)} (${detail})` : errorMessage(err);
}

function withTimeout<T>(task: Promise<T>, ms: number): Promise<T | undefined> {
  return Promise.race([task, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms).unref())]);
}
