/** The channel contract for NapCat: the channel over `ws` against the loopback OneBot v11 implementation. */
import { describeChannelContract } from '../contract.js';
import { startFakeOneBot } from './fake-onebot.js';

/** Contract chats: a direct chat is the person's id (a QQ number here), a group a negative number. */
const chatOf = (chatId: string) => (chatId.startsWith('-') ? `group:${chatId.slice(1)}` : `private:${chatId}`);

describeChannelContract({
  name: 'napcat',
  async startFake() {
    const bot = await startFakeOneBot();
    return {
      settings: { wsUrl: bot.url, accessToken: bot.token },
      // QQ has numbers, no usernames: allowFrom names the owner by QQ number.
      allowFromEntry: (sender) => sender.id,
      chatIdOf: chatOf,
      userSays: (message) => {
        bot.userSays({
          chatId: chatOf(message.chatId),
          userId: message.sender.id,
          messageId: Number(message.id),
          ...(message.sender.username ? { nickname: message.sender.username } : {}),
          text: message.text,
        });
      },
      messagesIn: (chatId) => bot.messagesIn(chatOf(chatId)),
      assertValid: (text) => {
        if (text.length > 3000) throw new Error(`a QQ message of ${text.length} characters`);
        if (/\*\*|```|\[[^\]]*\]\(/.test(text)) throw new Error(`Markdown left in a plain-text message: ${text}`);
      },
      visible: (text) => text,
      dropConnection: () => bot.drop(),
      restoreConnection: () => bot.restore(),
      close: () => bot.close(),
    };
  },
});
