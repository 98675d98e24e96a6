/**
 * The built `nanobot gateway` with the Signal channel: attached to a running signal-cli daemon (the loopback fake),
 * answering an allowed user's DM through the fake LLM and catching up after the daemon goes away; with
 * `startDaemon`, running a `signal-cli` found on PATH (a fake executable) and stopping it on shutdown; and, with no
 * signal-cli installed, staying up and saying how to install it.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { type FakeCli, fakeSignalCliBin, freePort, isAlive } from '../channels/signal/fake-cli.js';
import { BOT, type FakeSignalCli, person, startFakeSignalCli } from '../channels/signal/fake-signal-cli.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, type RunningGateway, spawnGateway, withOutput } from './channel-e2e.js';

const OWNER = person(1001, { name: 'Owner' });

const cleanup = cleanupsAfterEach();

async function gatewayWith(
  llm: FakeLLM,
  signal: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<RunningGateway> {
  const block = { enabled: true, phoneNumber: BOT.number, allowFrom: [OWNER.number], ...signal };
  return spawnGateway(await homeWithChannel('signal', llm, block), cleanup, { env });
}

async function fakes(): Promise<{ signal: FakeSignalCli; llm: FakeLLM }> {
  const signal = await startFakeSignalCli({ keepAliveMs: 200 });
  const llm = await startFakeLLM();
  signal.addPerson(OWNER);
  cleanup(
    () => signal.close(),
    () => llm.close(),
  );
  return { signal, llm };
}

describe('nanobot gateway with channels.signal', () => {
  it('answers a DM through a running daemon, and what was written while the daemon was away', async () => {
    const { signal, llm } = await fakes();
    const gateway = await gatewayWith(llm, {
      daemonHost: '127.0.0.1',
      daemonPort: signal.port,
      attachmentsDir: signal.attachmentsDir,
    });
    await eventually(() => expect(signal.streams()).toBe(1), 30_000).catch(withOutput(gateway));
    llm.enqueue({ text: 'Hello from the **built** gateway.' }, { text: 'Back again.' });
    signal.userSays({ from: OWNER, text: 'hi' });
    await eventually(() => expect(signal.messagesTo(OWNER)).toEqual(['Hello from the built gateway.']), 20_000);
    expect(signal.sentTo(OWNER)[0]?.textStyle).toEqual(['15:5:BOLD']);

    signal.drop();
    signal.userSays({ from: OWNER, text: 'still there?' });
    signal.restore();
    await eventually(
      () => expect(signal.messagesTo(OWNER)).toEqual(['Hello from the built gateway.', 'Back again.']),
      30_000,
    ).catch(withOutput(gateway));
    expect(gateway.output()).not.toContain('still there?');
  }, 90_000);

  it('startDaemon runs the signal-cli on PATH, answers through it, and stops it with the gateway', async () => {
    const { signal, llm } = await fakes();
    const port = await freePort();
    signal.acceptHostPort(port);
    const cli: FakeCli = fakeSignalCliBin({ upstream: signal });
    const gateway = await gatewayWith(
      llm,
      { startDaemon: true, daemonHost: '127.0.0.1', daemonPort: port, attachmentsDir: signal.attachmentsDir },
      { ...cli.env, PATH: `${cli.dir}:${process.env.PATH ?? '/usr/bin:/bin'}` },
    );
    await eventually(() => expect(signal.streams()).toBe(1), 30_000).catch(withOutput(gateway));
    const daemon = cli.runs().find((run) => run.args.includes('daemon'));
    expect(daemon?.args.slice(0, 5)).toEqual(['-a', BOT.number, 'daemon', '--http', `127.0.0.1:${port}`]);
    llm.enqueue({ text: 'Via the daemon I started.' });
    signal.userSays({ from: OWNER, text: 'hi' });
    await eventually(() => expect(signal.messagesTo(OWNER)).toEqual(['Via the daemon I started.']), 20_000);

    gateway.child.kill('SIGTERM');
    await gateway.exited;
    await eventually(() => expect(isAlive(daemon?.pid ?? 0)).toBe(false));
  }, 90_000);

  it('with startDaemon and no signal-cli installed, stays up and says how to install it', async () => {
    const { llm } = await fakes();
    const port = await freePort();
    const gateway = await gatewayWith(llm, { startDaemon: true, daemonPort: port }, { PATH: '/usr/bin:/bin' });
    await eventually(() => expect(gateway.output()).toContain('signal-cli was not found'), 30_000).catch(
      withOutput(gateway),
    );
    expect(gateway.output()).toContain('https://github.com/AsamK/signal-cli/releases');
    expect(gateway.child.exitCode).toBeNull();
  }, 60_000);
});
