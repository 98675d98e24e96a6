/**
 * `startDaemon: true` through a real gateway: the channel runs `signal-cli … daemon --http` (a fake executable that
 * passes connections through to the fake daemon), answers through it, stops it on shutdown, starts a new one when
 * it dies, and says what is wrong when it cannot start (missing executable, an account signal-cli does not have).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../contract.js';
import { type FakeCliOptions, fakeSignalCliBin, freePort, isAlive } from './fake-cli.js';
import { BOT, startFakeSignalCli } from './fake-signal-cli.js';
import { healthOf, OWNER, type SignalGateway, startSignalGateway, waitState } from './helpers.js';

const open: SignalGateway[] = [];
const envKeys = new Set<string>();
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
  for (const key of envKeys) delete process.env[key];
  envKeys.clear();
});

/** A gateway with startDaemon on, whose `signal-cli` is the fake executable (its settings go to the child's env). */
async function daemonGateway(options: FakeCliOptions = {}, settings: Record<string, unknown> = {}) {
  const fake = await startFakeSignalCli({ keepAliveMs: 200 });
  const port = await freePort();
  fake.acceptHostPort(port);
  const cli = fakeSignalCliBin({ upstream: fake, ...options });
  for (const [key, value] of Object.entries(cli.env)) {
    process.env[key] = value;
    envKeys.add(key);
  }
  const run = await startSignalGateway({ startDaemon: true, cliPath: cli.path, daemonPort: port, ...settings }, fake);
  const daemons = () => cli.runs().filter((r) => r.args.includes('daemon'));
  return { run, cli, port, fake, daemons };
}

describe('signal startDaemon', () => {
  it('runs signal-cli’s daemon (on-connection receiving, no message output), answers through it, stops it', async () => {
    const { run, port, fake, daemons } = await daemonGateway();
    try {
      await waitState(run.gateway, 'running');
      expect(daemons().map((d) => d.args)).toEqual([
        [
          '-a',
          BOT.number,
          'daemon',
          '--http',
          `127.0.0.1:${port}`,
          '--receive-mode',
          'on-connection',
          '--no-receive-stdout',
        ],
      ]);
      run.llm.enqueue({ text: 'Through the daemon.' });
      fake.userSays({ from: OWNER, text: 'hi' });
      await eventually(() => expect(fake.messagesTo(OWNER)).toEqual(['Through the daemon.']));
    } finally {
      await run.close();
    }
    expect(isAlive(daemons()[0]?.pid ?? 0)).toBe(false);
  });

  it('starts a new daemon when it dies; what was written meanwhile is answered', async () => {
    const { run, fake, daemons } = await daemonGateway();
    open.push(run);
    await waitState(run.gateway, 'running');
    process.kill(daemons()[0]?.pid ?? 0, 'SIGKILL');
    await eventually(async () => expect((await healthOf(run.gateway)).channels.signal).not.toBe('running'));
    run.llm.enqueue({ text: 'Back.' });
    fake.userSays({ from: OWNER, text: 'still there?' });
    await eventually(() => expect(fake.messagesTo(OWNER)).toEqual(['Back.']), 15_000);
    expect(daemons()).toHaveLength(2);
    expect(isAlive(daemons()[0]?.pid ?? 0)).toBe(false);
  });

  it('reports the daemon’s last words when it exits while starting (an account signal-cli does not have)', async () => {
    const { run } = await daemonGateway({ mode: 'daemon-dies' });
    open.push(run);
    await eventually(async () => {
      const error = (await healthOf(run.gateway)).channelDetails.signal?.error ?? '';
      expect(error).toContain("signal-cli's daemon stopped while starting");
      expect(error).toContain(`User ${BOT.number} is not registered`);
    });
  });

  it('a missing executable is a setup error naming signal-cli and how to install it, not a crash or a retry loop', async () => {
    const fake = await startFakeSignalCli();
    const port = await freePort();
    const run = await startSignalGateway(
      { startDaemon: true, cliPath: '/nonexistent/bin/signal-cli', daemonPort: port },
      fake,
    );
    open.push(run);
    await waitState(run.gateway, 'error');
    const details = (await healthOf(run.gateway)).channelDetails.signal;
    expect(details?.error).toContain('signal-cli was not found');
    expect(details?.error).toContain('/nonexistent/bin/signal-cli');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await healthOf(run.gateway)).channelDetails.signal?.restarts ?? 0).toBe(0);
  });

  it('uses a daemon that already answers at daemonPort instead of starting a second one', async () => {
    const fake = await startFakeSignalCli({ keepAliveMs: 200 });
    const cli = fakeSignalCliBin({ upstream: fake });
    const run = await startSignalGateway({ startDaemon: true, cliPath: cli.path }, fake);
    open.push(run);
    await waitState(run.gateway, 'running');
    expect(cli.runs()).toEqual([]);
  });
});
