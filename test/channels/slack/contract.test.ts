/** The channel contract for Slack: the real @slack/bolt (Socket Mode) against the loopback fake Slack. */
import { describeChannelContract } from '../contract.js';
import { startFakeSlack } from './fake-slack.js';
import { assertSlackMrkdwn, visibleMrkdwn } from './mrkdwn.js';

describeChannelContract({
  name: 'slack',
  async startFake() {
    const slack = await startFakeSlack();
    return {
      settings: {
        botToken: slack.botToken,
        appToken: slack.appToken,
        apiBase: slack.apiBase,
        streamEditInterval: 0.05,
      },
      userSays: (message) => {
        if (message.sender.username) slack.addUser(message.sender.id, message.sender.username);
        // Contract ids are digits: a negative chat id is a channel, any other a DM; the message id is its ts.
        const channelType = message.chatType === 'direct' ? 'im' : 'channel';
        const text = message.chatType === 'group' ? message.text.replace(/@bot\b/, '<@UBOT>') : message.text;
        slack.userSays({
          channel: message.chatId,
          user: message.sender.id,
          text,
          ts: `${message.id}.000100`,
          channelType,
        });
      },
      messagesIn: (chatId) => slack.messagesIn(chatId).map((post) => post.text),
      assertValid: assertSlackMrkdwn,
      visible: visibleMrkdwn,
      dropConnection: () => slack.drop(),
      restoreConnection: () => slack.restore(),
      close: () => slack.close(),
    };
  },
});
