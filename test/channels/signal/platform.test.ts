/** The Signal adapter alone, over the fake daemon: the silent-stream watchdog and the pace of "typing…". */
import { afterEach, describe, expect, it } from 'vitest';
import type { IncomingMessage, PlatformLink } from '../../../src/channels/platform.js';
import { signalSettingsSchema } from '../../../src/channels/signal/index.js';
import { SignalPlatform } from '../../../src/channels/signal/platform.js';
import { silentLogger } from '../../../src/util/log.js';
import { eventually } from '../contract.js';
import { type FakeSignalCli, startFakeSignalCli } from './fake-signal-cli.js';
import { OWNER, signalSettings } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function connected(signal: FakeSignalCli, idleMs?: number) {
  const settings = signalSettingsSchema.parse({ ...signalSettings(signal), allowFrom: [OWNER.number] });
  const platform = new SignalPlatform({ settings: () => settings, log: silentLogger, ...(idleMs ? { idleMs } : {}) });
  const failures: Error[] = [];
  const received: IncomingMessage[] = [];
  const link: PlatformLink = {
    receive: async (message) => {
      received.push(message);
    },
    failed: (error) => failures.push(error),
    commands: () => [],
    log: silentLogger,
  };
  await platform.connect(link);
  cleanups.push(() => platform.disconnect());
  return { platform, link, failures, received };
}

describe('SignalPlatform', () => {
  it('reports a stream that goes silent (no keep-alives) as lost, and a keep-alive keeps it alive', async () => {
    const quiet = await startFakeSignalCli({ keepAliveMs: 60_000 });
    cleanups.push(() => quiet.close());
    const idle = await connected(quiet, 300);
    await eventually(() => expect(idle.failures.map((e) => e.message)).toEqual([expect.stringMatching(/went silent/)]));

    const chatty = await startFakeSignalCli({ keepAliveMs: 50 });
    cleanups.push(() => chatty.close());
    const alive = await connected(chatty, 300);
    await new Promise((resolve) => setTimeout(resolve, 900));
    expect(alive.failures).toEqual([]);
    chatty.userSays({ from: OWNER, text: 'still listening?' });
    await eventually(() => expect(alive.received.map((m) => m.text)).toEqual(['still listening?']));
    // The daemon hangs later on: the stream is open but says nothing any more.
    chatty.pauseKeepAlive();
    await eventually(() =>
      expect(alive.failures.map((e) => e.message)).toEqual([expect.stringMatching(/went silent/)]),
    );
  });

  it('sends "typing…" to a chat at most every 10 s (each one is a message to the chat)', async () => {
    const signal = await startFakeSignalCli();
    cleanups.push(() => signal.close());
    signal.addPerson(OWNER);
    const { platform } = await connected(signal);
    for (let i = 0; i < 5; i++) await platform.sendTyping({ chatId: OWNER.number ?? '' });
    expect(signal.typing).toHaveLength(1);
  });

  it('a disconnect ends the stream without reporting it lost', async () => {
    const signal = await startFakeSignalCli();
    cleanups.push(() => signal.close());
    const { platform, failures } = await connected(signal);
    await eventually(() => expect(signal.streams()).toBe(1));
    await platform.disconnect();
    await eventually(() => expect(signal.streams()).toBe(0));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(failures).toEqual([]);
  });
});
