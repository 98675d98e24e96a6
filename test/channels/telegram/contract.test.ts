/** The channel contract for Telegram: the real grammy against the loopback fake Bot API. */
import { describeChannelContract } from '../contract.js';
import { startFakeBotApi } from './fake-bot-api.js';
import { assertTelegramHtml, visibleText } from './telegram-html.js';

describeChannelContract({
  name: 'telegram',
  async startFake() {
    const api = await startFakeBotApi();
    return {
      settings: { token: api.token, apiBase: api.url, pollTimeout: 1, streamEditInterval: 0.05 },
      userSays: (message) => {
        api.userSays({
          chatId: Number(message.chatId),
          messageId: Number(message.id),
          text: message.text,
          from: {
            id: Number(message.sender.id),
            ...(message.sender.username ? { username: message.sender.username } : {}),
          },
          chatType: message.chatType === 'direct' ? 'private' : 'group',
        });
      },
      messagesIn: (chatId) => api.messagesIn(chatId).map((m) => m.text),
      assertValid: (text) => {
        assertTelegramHtml(text);
        if (visibleText(text).length > 4096) throw new Error(`message is too long (${visibleText(text).length})`);
      },
      visible: visibleText,
      dropConnection: () => api.drop(),
      restoreConnection: () => api.restore(),
      close: () => api.close(),
    };
  },
});
