/**
 * The channel contract for WhatsApp: the real Baileys against the loopback WhatsApp Web (Noise handshake, QR-linked
 * device, Signal-encrypted messages from libsignal phones, offline delivery after a reconnect).
 */
import { describeChannelContract } from '../contract.js';
import { assertWhatsAppText, linkedFake, numberOf, visibleText } from './harness.js';

/** A contract chat id as a WhatsApp chat: a direct chat is the user's number, a group a `@g.us` JID. */
const chatJid = (chatId: string, chatType: 'direct' | 'group') =>
  chatType === 'group'
    ? `120363${chatId.replace(/\D/g, '').padStart(9, '0')}@g.us`
    : `${numberOf(chatId)}@s.whatsapp.net`;

describeChannelContract({
  name: 'whatsapp',
  async startFake() {
    const linked = await linkedFake();
    return {
      settings: linked.settings,
      senderId: (sender) => numberOf(sender.id),
      allowFromEntry: (sender) => numberOf(sender.id),
      userSays: async (message) => {
        const phone = linked.phoneOf(message.sender.id);
        const group = message.chatType === 'group' ? { group: chatJid(message.chatId, 'group') } : {};
        const mention = /@bot\b/.test(message.text);
        await phone.says(message.text.replace(/@bot\b\s*/, ''), { id: `3EB0${message.id}`, ...group, mention });
      },
      messagesIn: (chatId) => {
        const jids = [chatJid(chatId, 'direct'), chatJid(chatId, 'group')];
        return jids.flatMap((jid) =>
          (linked.fake.sent.get(jid) ?? []).map(
            ({ message }) => message.conversation ?? message.extendedTextMessage?.text ?? '',
          ),
        );
      },
      assertValid: assertWhatsAppText,
      visible: visibleText,
      dropConnection: () => linked.fake.drop(),
      restoreConnection: () => linked.fake.restore(),
      close: () => linked.close(),
    };
  },
});
