/**
 * The built `nanobot gateway` with the Signal channel: attached to a running signal-cli daemon (the loopback fake),
 * answering an allowed user's DM through the fake LLM and catching up after the daemon goes away; with
 * `startDaemon`, running a `signal-cli` found on PATH (a fake executable) and stopping it on shutdown; and, with no
 * signal-cli installed, staying up and saying how to install it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { type FakeCli, fakeSignalCliBin, freePort, isAlive } from '../channels/signal/fake-cli.js';
import { BOT, type FakeSignalCli, person, startFakeSignalCli } from '../channels/signal/fake-signal-cli.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { editConfig, runCli, type SpawnedCli, spawnCli, tempHome } from './cli-helpers.js';

const OWNER = person(1001, { name: 'Owner' });

let cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function gatewayWith(
  llm: FakeLLM,
  signal: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<SpawnedCli> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${llm.url}/v1` };
    const channels = c.channels as Record<string, Record<string, unknown>>;
    channels.websocket = { ...channels.websocket, enabled: false };
    channels.signal = {
      ...channels.signal,
      enabled: true,
      phoneNumber: BOT.number,
      allowFrom: [OWNER.number],
      ...signal,
    };
  });
  const gateway = spawnCli(['gateway', '--port', '0'], home, { env });
  cleanups.push(async () => {
    gateway.child.kill('SIGTERM');
    await gateway.exited;
  });
  return gateway;
}

async function fakes(): Promise<{ signal: FakeSignalCli; llm: FakeLLM }> {
  const signal = await startFakeSignalCli({ keepAliveMs: 200 });
  const llm = await startFakeLLM();
  signal.addPerson(OWNER);
  cleanups.push(
    () => signal.close(),
    () => llm.close(),
  );
  return { signal, llm };
}

const withOutput = (gateway: SpawnedCli) => (err: unknown) => {
  throw new Error(`${String(err)}\n${gateway.output()}`);
};

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
