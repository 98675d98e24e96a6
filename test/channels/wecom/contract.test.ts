/** The channel contract for WeCom: the official @wecom/aibot-node-sdk against the loopback long connection. */
import { describeChannelContract } from '../contract.js';
import { startFakeWecom } from './fake-wecom.js';
import { assertWecomMarkdown, visibleText } from './wecom-markdown.js';

describeChannelContract({
  name: 'wecom',
  async startFake() {
    const wecom = await startFakeWecom();
    return {
      settings: wecom.settings,
      // WeCom names people by userid and has no usernames.
      allowFromEntry: (sender) => sender.id,
      userSays: (message) => {
        wecom.userSays({
          userId: message.sender.id,
          chatId: message.chatId,
          chatType: message.chatType === 'group' ? 'group' : 'single',
          id: message.id,
          text: message.text,
        });
      },
      messagesIn: (chatId) => wecom.messagesIn(chatId),
      assertValid: assertWecomMarkdown,
      visible: visibleText,
      dropConnection: () => wecom.drop(),
      restoreConnection: () => wecom.restore(),
      close: () => wecom.close(),
    };
  },
});
