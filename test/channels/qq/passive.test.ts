/** QQ's reply window, on the platform alone with an injected clock: msg_id while it is open, then active messages. */

import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { IncomingMessage, PlatformLink } from '../../../src/channels/platform.js';
import { type QqSettings, qqChannel } from '../../../src/channels/qq/index.js';
import { QqPlatform } from '../../../src/channels/qq/platform.js';
import type { Logger } from '../../../src/util/log.js';
import { eventually } from '../contract.js';
import { type FakeQq, startFakeQq } from './fake-qq.js';
import { GROUP, OWNER } from './helpers.js';

const quietLog = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;
let qq: FakeQq | undefined;
let platform: QqPlatform | undefined;
afterEach(async () => {
  await platform?.disconnect();
  await qq?.close();
});

async function connected(now: () => number) {
  qq = await startFakeQq();
  const settings = qqChannel.parse({ ...qq.settings, ackMessage: '' }) as QqSettings;
  platform = new QqPlatform({ WebSocket, settings: () => settings, log: quietLog, now });
  const received: IncomingMessage[] = [];
  const link: PlatformLink = {
    receive: async (message) => {
      received.push(message);
    },
    failed: () => undefined,
    commands: () => [],
    log: quietLog,
  };
  await platform.connect(link);
  return { fake: qq, platform, received };
}

const part = (text: string) => ({ text, markdown: text });

describe('qq passive replies', () => {
  it('answers with msg_id up to five times per message within the window, then as an active message', async () => {
    const now = 0;
    const { fake, platform, received } = await connected(() => now);
    const id = fake.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'hi' });
    await eventually(() => expect(received).toHaveLength(1));
    for (let i = 1; i <= 6; i += 1) await platform.sendText({ chatId: OWNER }, part(`reply ${i}`));
    expect(fake.sent.map((m) => [m.body.msg_id, m.body.msg_seq])).toEqual([
      [id, 1],
      [id, 2],
      [id, 3],
      [id, 4],
      [id, 5],
      [undefined, undefined],
    ]);
  });

  it('a group reply after five minutes goes without msg_id; a private one still answers within the hour', async () => {
    let now = 0;
    const { fake, platform, received } = await connected(() => now);
    const inGroup = fake.userSays({ chatId: GROUP, userOpenid: 'MEMBER1', text: 'hello' });
    const inPrivate = fake.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'hi' });
    await eventually(() => expect(received).toHaveLength(2));
    now += 6 * 60_000;
    await platform.sendText({ chatId: GROUP }, part('late in the group'));
    await platform.sendText({ chatId: OWNER }, part('late in private'));
    expect(fake.sent.map((m) => [m.chatId, m.body.msg_id])).toEqual([
      [GROUP, undefined],
      [OWNER, inPrivate],
    ]);
    expect(inGroup).toBeTruthy();
    now += 60 * 60_000;
    await platform.sendText({ chatId: OWNER }, part('much later'));
    expect(fake.sent.at(-1)?.body.msg_id).toBeUndefined();
  });
});
