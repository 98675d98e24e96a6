/**
 * The channel contract for email: the real imapflow and nodemailer against a real dovecot and an in-process SMTP
 * server (mail-world.ts). Skipped only when dovecot is not installed.
 */
import { afterAll, describe } from 'vitest';
import { describeChannelContract } from '../contract.js';
import { DOVECOT } from './dovecot.js';
import { startMailWorld, stopSharedDovecot } from './mail-world.js';

/**
 * The mailbox names of the suite's users. Email has one identifier per person, the address; for users of the
 * bot's own domain the channel uses the name before the @ as both id and username. The suite names its owner by
 * username (`@owner_user` in allowFrom) and checks a stranger's pairing request by id, so the owner writes from
 * owner_user@… and everyone else from <id>@…. Chat ids are people's ids; `501@…` is an alias of the owner.
 */
const MAILBOX_OF_USER: Record<string, string> = { '501': 'owner_user' };
const mailboxOf = (id: string) => MAILBOX_OF_USER[id] ?? id;

/** What the suite checks per message: within the configured length, text without Markdown left over. */
const MAX_REPLY_CHARS = 4_000;

describe.skipIf(!DOVECOT)('email (real dovecot)', () => {
  afterAll(() => stopSharedDovecot());

  describeChannelContract({
    name: 'email',
    async startFake() {
      const world = await startMailWorld();
      for (const [id, mailbox] of Object.entries(MAILBOX_OF_USER)) world.alias(id, mailbox);
      return {
        // A short reply limit, so the long reply of the suite arrives as several mails (the default holds 100k).
        settings: { ...world.settings, maxReplyChars: MAX_REPLY_CHARS },
        userSays: async (message) => {
          await world.send({
            from: mailboxOf(message.sender.id),
            messageId: message.id,
            subject: message.chatType === 'group' ? 'To everyone' : 'Hello',
            text: message.text,
          });
        },
        messagesIn: (chatId) => world.mailsTo(mailboxOf(chatId)).map((mail) => mail.text),
        assertValid: (text) => {
          if (text.length > MAX_REPLY_CHARS) throw new Error(`mail body is too long (${text.length})`);
          if (text.trim() === '') throw new Error('empty mail body');
          if (/\*\*|^#{1,6} |^```/m.test(text))
            throw new Error(`Markdown left in a plain-text mail: ${text.slice(0, 80)}`);
          if (/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text))
            throw new Error('mail body is not valid text');
        },
        visible: (text) => text,
        dropConnection: () => world.cut(),
        restoreConnection: () => world.restore(),
        close: () => world.close(),
      };
    },
  });
});
