/** The channel contract for DingTalk: the real dingtalk-stream SDK and fetch against the loopback DingTalk. */
import { describeChannelContract } from '../contract.js';
import { assertDingtalkMarkdown, visibleText } from './dingtalk-markdown.js';
import { startFakeDingtalk } from './fake-dingtalk.js';

/** Contract chats: a direct chat is the person's user id, a group (a negative id) `group:<openConversationId>`. */
const chatOf = (chatId: string) => (chatId.startsWith('-') ? `group:cidG${chatId.slice(1)}` : chatId);

describeChannelContract({
  name: 'dingtalk',
  async startFake() {
    const dingtalk = await startFakeDingtalk();
    return {
      settings: dingtalk.settings,
      // DingTalk has user ids, no usernames: allowFrom names the owner by user id.
      allowFromEntry: (sender) => sender.id,
      chatIdOf: chatOf,
      userSays: (message) => {
        dingtalk.userSays({
          chatId: chatOf(message.chatId),
          staffId: message.sender.id,
          id: message.id,
          // In a group DingTalk pushes only @-messages, with the @robot taken out.
          text: message.text.replace(/@bot\s*/, ''),
        });
      },
      messagesIn: (chatId) => dingtalk.messagesIn(chatOf(chatId)),
      assertValid: assertDingtalkMarkdown,
      visible: visibleText,
      dropConnection: () => dingtalk.drop(),
      restoreConnection: () => dingtalk.restore(),
      close: () => dingtalk.close(),
    };
  },
});
