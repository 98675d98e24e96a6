/** The channel contract for Mattermost: the real @mattermost/client (REST + WebSocket) against the loopback fake. */
import { describeChannelContract } from '../contract.js';
import { BOT, startFakeMattermost } from './fake-mattermost.js';
import { assertMattermostPost, visibleText } from './mattermost-markdown.js';

describeChannelContract({
  name: 'mattermost',
  async startFake() {
    const mm = await startFakeMattermost();
    return {
      settings: { serverUrl: mm.url, token: mm.token, streamEditInterval: 0.05 },
      userSays: (message) => {
        mm.userSays({
          // A contract direct chat is the user's DM channel; a group chat is a public channel.
          channelId: message.chatId,
          kind: message.chatType === 'direct' ? 'dm' : 'channel',
          id: message.id,
          user: { id: message.sender.id, username: message.sender.username ?? `user${message.sender.id}` },
          text: message.text.replace(/@bot\b/, `@${BOT.username}`),
        });
      },
      messagesIn: (chatId) => mm.messagesIn(chatId).map((post) => post.message),
      assertValid: assertMattermostPost,
      visible: visibleText,
      dropConnection: () => mm.drop(),
      restoreConnection: () => mm.restore(),
      close: () => mm.close(),
    };
  },
});
