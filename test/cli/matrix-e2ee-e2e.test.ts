/**
 * The built `nanobot gateway` in an end-to-end encrypted Matrix room: the bundle loads matrix-js-sdk, its Rust
 * crypto (the wasm from node_modules) and fake-indexeddb on demand; a user's own matrix-js-sdk with Rust crypto
 * talks to it through the fake homeserver. The gateway process is stopped and started again: the same device reads
 * the user's next message with the room key from before the restart, and answers it encrypted.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { startE2eeUser } from '../channels/matrix/e2ee-user.js';
import { type FakeHomeserver, startFakeHomeserver } from '../channels/matrix/fake-homeserver.js';
import { OWNER } from '../channels/matrix/helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, type RunningGateway, spawnGateway, withOutput } from './channel-e2e.js';
import { runCli } from './cli-helpers.js';

const cleanup = cleanupsAfterEach();

const configured = (hs: FakeHomeserver, llm: FakeLLM): Promise<string> =>
  homeWithChannel('matrix', llm, {
    enabled: true,
    homeserver: hs.url,
    userId: hs.botId,
    password: 'hunter2',
    allowFrom: [OWNER],
  });

const gateway = (home: string): RunningGateway => spawnGateway(home, cleanup);

describe('nanobot gateway with an encrypted Matrix room', () => {
  it('decrypts and answers encrypted, and still does after the gateway process restarts', async () => {
    const hs = await startFakeHomeserver();
    const llm = await startFakeLLM();
    cleanup(
      () => hs.close(),
      () => llm.close(),
    );
    const room = hs.createRoom({ members: [OWNER], encrypted: true });
    const home = await configured(hs, llm);

    const first = gateway(home);
    await eventually(() => expect(hs.keys.devicesOf(hs.botId)).toHaveLength(1), 30_000).catch(withOutput(first));
    const [device] = hs.keys.devicesOf(hs.botId);
    const owner = await startE2eeUser(hs, OWNER);
    cleanup(() => owner.stop());

    llm.enqueue({ text: 'Encrypted hello.' }, { text: 'Encrypted again, after the restart.' });
    await owner.say(room, 'first secret');
    await eventually(async () => expect(await owner.botTexts(room)).toEqual(['Encrypted hello.']), 30_000).catch(
      withOutput(first),
    );
    await first.stop();

    const relayedToBot = () => hs.keys.relayed.filter((r) => r.to.user === hs.botId).length;
    const before = relayedToBot();
    const second = gateway(home);
    await eventually(() => expect(second.output()).toMatch(/matrix.*connected/i), 30_000).catch(withOutput(second));
    await owner.say(room, 'second secret');
    await eventually(
      async () =>
        expect(await owner.botTexts(room)).toEqual(['Encrypted hello.', 'Encrypted again, after the restart.']),
      30_000,
    ).catch(withOutput(second));
    // The same device, and no new room key needed: the store from before the restart read it.
    expect(hs.keys.devicesOf(hs.botId)).toEqual([device]);
    expect(relayedToBot()).toBe(before);
    expect(JSON.stringify(llm.requests.map((r) => r.body))).toContain('second secret');
    expect(JSON.stringify(hs.eventsIn(room))).not.toContain('secret');

    const cryptoDir = join(home, '.nanobot', 'matrix', 'crypto');
    for (const file of readdirSync(cryptoDir)) expect(statSync(join(cryptoDir, file)).mode & 0o777).toBe(0o600);
    const output = first.output() + second.output();
    expect(output).not.toMatch(/matrix_sdk_crypto|DEBUG/);
    expect(output).not.toContain('syt_login_');
    expect(output).toContain(`device ${device}`);

    // `nanobot channels status` shows the device and that nobody has verified it yet.
    const status = await runCli(['channels', 'status'], home);
    expect(status.stdout).toMatch(new RegExp(`encryption: device ${device}, not verified .*fingerprint \\S{4} `));
  }, 120_000);
});
