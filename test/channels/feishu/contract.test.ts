/** The channel contract for Feishu: the real Lark SDK (WSClient + Client) against the loopback fake Open Platform. */
import { describeChannelContract } from '../contract.js';
import { assertValidCardMarkdown, visibleMarkdown } from './fake-helpers.js';
import { APP, startFakeFeishu } from './fake-open-platform.js';

/** Contract chat ids are digits; Feishu chat ids look like `oc_…`. */
const chatOf = (chatId: string) => chatId;

describeChannelContract({
  name: 'feishu',
  async startFake() {
    const fake = await startFakeFeishu();
    return {
      settings: { appId: APP.id, appSecret: APP.secret, domain: fake.url, streamEditInterval: 0.2 },
      userSays: (message) => {
        fake.userSays({
          messageId: `om_${message.id}`,
          chatId: chatOf(message.chatId),
          chatType: message.chatType === 'direct' ? 'p2p' : 'group',
          from: { openId: message.sender.id, ...(message.sender.username ? { userId: message.sender.username } : {}) },
          text: message.text,
        });
      },
      messagesIn: (chatId) => fake.messagesIn(chatOf(chatId)).map((m) => m.text),
      assertValid: assertValidCardMarkdown,
      visible: visibleMarkdown,
      dropConnection: () => fake.drop(),
      restoreConnection: () => fake.restore(),
      close: () => fake.close(),
    };
  },
});
