/**
 * End-to-end encryption through a real gateway: the bot's matrix-js-sdk with Rust crypto and a user's own
 * matrix-js-sdk with Rust crypto, both against the fake homeserver, which only relays ciphertext and keys.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { type ChannelHome, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type E2eeUser, startE2eeUser } from './e2ee-user.js';
import { type FakeHomeserver, startFakeHomeserver } from './fake-homeserver.js';
import { healthOf, lastUserText, OWNER } from './helpers.js';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function setup(): Promise<{ hs: FakeHomeserver; llm: FakeLLM; files: ChannelHome }> {
  const hs = await startFakeHomeserver();
  const llm = await startFakeLLM();
  cleanup.push(
    () => hs.close(),
    () => llm.close(),
  );
  const files = await writeChannelConfig('matrix', llm, {
    homeserver: hs.url,
    userId: hs.botId,
    accessToken: hs.token,
    allowFrom: [OWNER],
  });
  return { hs, llm, files };
}

async function gateway(files: ChannelHome): Promise<Gateway> {
  const gw = await startChannelGateway(files);
  let stopped = false;
  cleanup.push(() => (stopped ? undefined : gw.shutdown('test end')));
  await eventually(async () => expect((await healthOf(gw)).channels.matrix).toBe('running'), 20_000);
  return Object.assign(gw, {
    stop: async () => {
      stopped = true;
      await gw.shutdown('restart');
    },
  });
}

async function user(hs: FakeHomeserver): Promise<E2eeUser> {
  const u = await startE2eeUser(hs, OWNER);
  cleanup.push(() => u.stop());
  return u;
}

describe('matrix end-to-end encryption', () => {
  it('decrypts a message in an encrypted room, answers encrypted, and still does after a restart', async () => {
    const { hs, llm, files } = await setup();
    const room = hs.createRoom({ members: [OWNER], encrypted: true });
    const first = (await gateway(files)) as Gateway & { stop(): Promise<void> };
    await eventually(() => expect(hs.keys.devicesOf(hs.botId)).toEqual(['DEV0']));
    const owner = await user(hs);

    llm.enqueue({ text: 'The secret answer.' });
    await owner.say(room, 'a secret question');
    await eventually(async () => expect(await owner.botTexts(room)).toEqual(['The secret answer.']), 20_000);
    expect(lastUserText(llm)).toContain('a secret question');
    // Nothing readable crossed the homeserver: the user's message and the bot's reply are m.room.encrypted.
    const wire = hs.eventsIn(room).filter((e) => e.type.startsWith('m.room.message') || e.type === 'm.room.encrypted');
    expect(wire.map((e) => e.type)).toEqual(['m.room.encrypted', 'm.room.encrypted']);
    expect(JSON.stringify(hs.eventsIn(room))).not.toContain('secret');

    // The keys are on disk, for the owner only.
    const cryptoDir = join(files.dataDir, 'matrix', 'crypto');
    const [store] = readdirSync(cryptoDir);
    expect(statSync(join(cryptoDir, store ?? '')).mode & 0o777).toBe(0o600);
    expect(statSync(cryptoDir).mode & 0o777).toBe(0o700);

    // A restart: a new gateway and channel, the same device, its keys from the file.
    await first.stop();
    const keysToBot = () => hs.keys.relayed.filter((r) => r.to.user === hs.botId).length;
    const keysBefore = keysToBot();
    await gateway(files);
    llm.enqueue({ text: 'Still here, still private.' });
    await owner.say(room, 'are you still there?');
    await eventually(
      async () => expect(await owner.botTexts(room)).toEqual(['The secret answer.', 'Still here, still private.']),
      20_000,
    );
    expect(lastUserText(llm)).toContain('are you still there?');
    // The user's client sent no new room key: the restarted bot read the new message with the room key it had
    // before the restart, the one the earlier history is encrypted with.
    expect(keysToBot()).toBe(keysBefore);
    // The same device: no second set of device keys on the account.
    expect(hs.keys.devicesOf(hs.botId)).toEqual(['DEV0']);
  }, 90_000);

  it('keeps a message whose room key is late, and answers it once the key arrives', async () => {
    const { hs, llm, files } = await setup();
    const room = hs.createRoom({ members: [OWNER], encrypted: true });
    await gateway(files);
    await eventually(() => expect(hs.keys.devicesOf(hs.botId)).toEqual(['DEV0']));
    const owner = await user(hs);
    hs.keys.hold(hs.botId);
    llm.enqueue({ text: 'Got it, late but whole.' });
    const early = await owner.say(room, 'a message ahead of its key');
    // The bot has the encrypted event (its sync went past it) but not its key: nothing reaches the model yet.
    await eventually(() => expect(hs.botHasSeen(early)).toBe(true));
    expect(llm.requests).toHaveLength(0);
    hs.keys.release(hs.botId);
    await eventually(async () => expect(await owner.botTexts(room)).toEqual(['Got it, late but whole.']), 20_000);
    expect(lastUserText(llm)).toContain('a message ahead of its key');
  }, 60_000);
});
