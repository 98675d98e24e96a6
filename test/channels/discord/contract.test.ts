/** The channel contract for Discord: the real discord.js against the loopback fake REST API and gateway. */
import { describeChannelContract } from '../contract.js';
import { assertDiscordMessage, visibleText } from './discord-markdown.js';
import { startFakeDiscord } from './fake-discord.js';

/** Contract group ids are negative (Telegram style); Discord channel ids are plain snowflakes. */
const channelId = (chatId: string) => (chatId.startsWith('-') ? `8${chatId.slice(1)}` : chatId);

describeChannelContract({
  name: 'discord',
  async startFake() {
    const discord = await startFakeDiscord();
    return {
      settings: { token: discord.token, apiBase: discord.apiBase, streamEditInterval: 0.05 },
      userSays: (message) => {
        discord.userSays({
          channelId: channelId(message.chatId),
          kind: message.chatType === 'direct' ? 'dm' : 'guild',
          id: message.id,
          author: { id: message.sender.id, username: message.sender.username ?? `user${message.sender.id}` },
          content: message.text,
        });
      },
      messagesIn: (chatId) => discord.messagesIn(channelId(chatId)).map((m) => m.content),
      assertValid: assertDiscordMessage,
      visible: visibleText,
      dropConnection: () => discord.drop(),
      restoreConnection: () => discord.restore(),
      close: () => discord.close(),
    };
  },
});
