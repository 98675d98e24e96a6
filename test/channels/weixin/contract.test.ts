/** The channel contract for WeChat (iLink): the channel's own HTTP client against the loopback fake iLink server. */
import { describeChannelContract } from '../contract.js';
import { visibleText } from '../discord/discord-markdown.js';
import { startFakeIlink } from './fake-ilink.js';
import { assertWeixinText } from './helpers.js';

describeChannelContract({
  name: 'weixin',
  async startFake() {
    const ilink = await startFakeIlink();
    // WeChat ids look like `name@im.wechat`; a direct chat is the user's id, a group one ends in @chatroom.
    const userOf = (sender: { id: string; username?: string }) => `${sender.username ?? sender.id}@im.wechat`;
    const chats = new Map<string, string>();
    return {
      settings: { token: ilink.token, baseUrl: ilink.url, cdnBaseUrl: ilink.cdnUrl, contextMessageBudget: 10 },
      senderId: userOf,
      chatIdOf: (chatId) => chats.get(chatId) ?? chatId,
      userSays: (message) => {
        const from = message.chatType === 'group' ? `${message.chatId}@chatroom` : userOf(message.sender);
        chats.set(message.chatId, from);
        ilink.userSays({ from, id: message.id, text: message.text });
      },
      messagesIn: (chatId) => ilink.textsTo(chats.get(chatId) ?? chatId),
      assertValid: assertWeixinText,
      visible: (text) => visibleText(text.replace(/＜/g, '<').replace(/＞/g, '>')),
      dropConnection: () => ilink.drop(),
      restoreConnection: () => ilink.restore(),
      close: () => ilink.close(),
    };
  },
});
