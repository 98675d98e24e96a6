/** The channel contract for Signal: the channel's own HTTP/JSON-RPC/SSE client against the fake signal-cli daemon. */
import { describeChannelContract } from '../contract.js';
import { BOT, type FakePerson, person, startFakeSignalCli } from './fake-signal-cli.js';

describeChannelContract({
  name: 'signal',
  async startFake() {
    const signal = await startFakeSignalCli({ keepAliveMs: 200 });
    // A contract user is a Signal account; the owner is named in allowFrom by their Signal username.
    const people = new Map<string, FakePerson>();
    // A contract id is the person's phone number without its `+` (the suite writes to its chat ids). The owner
    // (allowFrom: @owner_user) has had that Signal username since before the bot started.
    const contractPerson = (id: string, extra: Partial<FakePerson> = {}) =>
      signal.addPerson({ ...person(Number(id), extra), number: `+${id}` });
    people.set('501', contractPerson('501', { username: 'owner_user' }));
    const personFor = (sender: { id: string; username?: string }) => {
      let found = people.get(sender.id);
      if (!found) {
        found = contractPerson(sender.id);
        people.set(sender.id, found);
      }
      return found;
    };
    const groups = new Map<string, string>();
    const groupFor = (chatId: string) => {
      let id = groups.get(chatId);
      if (!id) {
        id = signal.addGroup(`group ${chatId}`, []);
        groups.set(chatId, id);
      }
      return id;
    };
    const chatOf = (chatId: string) =>
      groups.has(chatId) ? (groups.get(chatId) as string) : personFor({ id: chatId });
    return {
      settings: {
        phoneNumber: BOT.number,
        daemonHost: '127.0.0.1',
        daemonPort: signal.port,
        attachmentsDir: signal.attachmentsDir,
      },
      senderId: (sender) => personFor(sender).number ?? '',
      userSays: (message) => {
        const from = personFor(message.sender);
        const mentionsBot = message.text.includes('@bot');
        signal.userSays({
          from,
          text: message.text.replace('@bot', '\uFFFC'),
          timestamp: 1_600_000_000_000 + Number(message.id),
          ...(message.chatType === 'group' ? { groupId: groupFor(message.chatId) } : {}),
          ...(mentionsBot ? { mentions: [{ person: BOT, start: message.text.indexOf('@bot'), length: 1 }] } : {}),
        });
      },
      messagesIn: (chatId) => signal.messagesTo(chatOf(chatId)),
      assertValid: (text) => {
        if (text.length > 2000)
          throw new Error(`a Signal message of ${text.length} characters (the channel sends up to 2,000)`);
        if (!text.trim()) throw new Error('an empty Signal message');
        if (/[\uE000-\uE007]/.test(text)) throw new Error('style marks left in the text');
      },
      visible: (text) => text,
      dropConnection: () => signal.drop(),
      restoreConnection: () => signal.restore(),
      close: () => signal.close(),
    };
  },
});
