/**
 * The channel contract for Microsoft Teams: the messaging endpoint checks every activity's token (jose) against the
 * loopback fake Bot Framework's keys, and replies go to its Bot Connector API. A webhook channel: a drop fails the
 * connector API while the endpoint keeps taking messages.
 */
import { describeChannelContract } from '../contract.js';
import { freePort, startFakeTeams } from './fake-teams.js';
import { assertTeamsHtml, visibleText } from './teams-html.js';

describeChannelContract({
  name: 'msteams',
  async startFake() {
    const teams = await startFakeTeams();
    const port = await freePort();
    teams.setEndpoint(`http://127.0.0.1:${port}/api/messages`);
    return {
      settings: teams.settings(port),
      userSays: async (message) => {
        await teams.userSays({
          id: message.id,
          conversationId: message.chatId,
          conversationType: message.chatType === 'direct' ? 'personal' : 'groupChat',
          user: {
            aadObjectId: message.sender.id,
            ...(message.sender.username ? { upn: message.sender.username } : {}),
          },
          text: message.text.replace(/@bot\b\s*/, ''),
          mentionBot: /@bot\b/.test(message.text),
        });
      },
      messagesIn: (chatId) => teams.messagesIn(chatId).map((activity) => activity.text ?? ''),
      assertValid: assertTeamsHtml,
      visible: visibleText,
      dropConnection: () => teams.drop(),
      restoreConnection: () => teams.restore(),
      refusedWhileDropped: () => teams.refusedWhileDropped(),
      close: () => teams.close(),
    };
  },
});
