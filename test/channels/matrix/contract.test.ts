/** The channel contract for Matrix: the real matrix-js-sdk against the loopback fake homeserver. */
import { describeChannelContract } from '../contract.js';
import { MAX_EVENT_BYTES, startFakeHomeserver } from './fake-homeserver.js';
import { assertMatrixHtml, visibleText } from './matrix-html.js';

describeChannelContract({
  name: 'matrix',
  async startFake() {
    const hs = await startFakeHomeserver();
    // Contract users live on the bot's homeserver. A chat is a room (a direct one holds just the user and the bot)
    // whose id is the contract's chat id: room ids are opaque to clients, and the suite sends to its chat ids.
    const userOf = (sender: { id: string; username?: string }) => `@${sender.username ?? sender.id}:${hs.serverName}`;
    const roomOf = (chatId: string) => chatId;
    return {
      settings: { homeserver: hs.url, userId: hs.botId, accessToken: hs.token, streamEditInterval: 0.05 },
      senderId: userOf,
      userSays: (message) => {
        const roomId = roomOf(message.chatId);
        const sender = userOf(message.sender);
        if (!hs.hasRoom(roomId)) {
          const others = message.chatType === 'group' ? [`@bystander:${hs.serverName}`] : [];
          hs.createRoom({ id: roomId, members: [sender, ...others] });
        }
        hs.userSays({ roomId, sender, body: message.text, eventId: `$${message.id}` });
      },
      messagesIn: (chatId) =>
        hs
          .messagesIn(roomOf(chatId))
          .map((m) => String(m.content.formatted_body ?? escapeHtml(String(m.content.body)))),
      assertValid: (text) => {
        assertMatrixHtml(text);
        // The event carries the HTML and its plain-text twin.
        if (2 * Buffer.byteLength(text) > MAX_EVENT_BYTES) throw new Error(`too large for one event: ${text.length}`);
      },
      visible: visibleText,
      dropConnection: () => hs.drop(),
      restoreConnection: () => hs.restore(),
      close: () => hs.close(),
    };
  },
});

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
