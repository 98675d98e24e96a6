/** The channel contract for MoChat: socket.io-client (msgpack packets) and fetch against the loopback MoChat. */
import { describeChannelContract } from '../contract.js';
import { startFakeMochat } from './fake-mochat.js';

/** Contract chats: a direct chat is a session (`session_<id>`), a group (a negative id) a panel. */
const chatOf = (chatId: string) => (chatId.startsWith('-') ? `panel_${chatId.slice(1)}` : `session_${chatId}`);

describeChannelContract({
  name: 'mochat',
  async startFake() {
    const mochat = await startFakeMochat({ panels: ['panel_900'] });
    return {
      settings: mochat.settings,
      // MoChat names people by user id: allowFrom lists ids.
      allowFromEntry: (sender) => sender.id,
      chatIdOf: chatOf,
      userSays: (message) => {
        mochat.userSays({
          chatId: chatOf(message.chatId),
          author: message.sender.id,
          id: message.id,
          text: message.text,
        });
      },
      messagesIn: (chatId) => mochat.messagesIn(chatOf(chatId)),
      assertValid: (text) => {
        if (text.length > 4000) throw new Error(`a MoChat message of ${text.length} characters`);
        const fences = text.split('\n').filter((line) => line.startsWith('```')).length;
        if (fences % 2 !== 0) throw new Error(`an unclosed code block: ${text.slice(0, 80)}…`);
      },
      visible: (text) => text.replace(/\*\*([^*]+)\*\*/g, '$1'),
      dropConnection: () => mochat.drop(),
      restoreConnection: () => mochat.restore(),
      close: () => mochat.close(),
    };
  },
});
