/** The channel contract for QQ: the channel over `ws` and fetch against the loopback QQ bot platform. */
import { describeChannelContract } from '../contract.js';
import { startFakeQq } from './fake-qq.js';

/** Contract chats: a direct chat is the person's openid, a group (a negative id) `group:<group_openid>`. */
const chatOf = (chatId: string) => (chatId.startsWith('-') ? `group:G${chatId.slice(1)}` : chatId);

describeChannelContract({
  name: 'qq',
  async startFake() {
    const qq = await startFakeQq();
    return {
      // No "⏳ Processing..." here: the contract counts the answers.
      settings: { ...qq.settings, ackMessage: '' },
      // QQ has openids, no usernames: allowFrom names the owner by openid.
      allowFromEntry: (sender) => sender.id,
      chatIdOf: chatOf,
      userSays: (message) => {
        qq.userSays({
          chatId: chatOf(message.chatId),
          userOpenid: message.sender.id,
          id: message.id,
          text: message.text,
        });
      },
      messagesIn: (chatId) => qq.messagesIn(chatOf(chatId)),
      assertValid: (text) => {
        if (text.length > 3000) throw new Error(`a QQ message of ${text.length} characters`);
        if (/\*\*|```|\[[^\]]*\]\(/.test(text)) throw new Error(`Markdown left in a plain-text message: ${text}`);
      },
      visible: (text) => text,
      dropConnection: () => qq.drop(),
      restoreConnection: () => qq.restore(),
      close: () => qq.close(),
    };
  },
});
