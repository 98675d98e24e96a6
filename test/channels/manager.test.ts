import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MessageBus } from '../../src/bus/message-bus.js';
import { ChatChannel } from '../../src/channels/chat-channel.js';
import { ChannelManager } from '../../src/channels/manager.js';
import { PairingStore } from '../../src/channels/pairing.js';
import { channelSdk, channelSettingsSchema, requireSetting } from '../../src/channels/settings.js';
import { UserError } from '../../src/util/errors.js';
import { eventually } from './contract.js';
import { MemoryPlatform } from './memory-platform.js';

const managers: ChannelManager[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const manager of managers.splice(0)) await manager.stop();
});

function channelOn(platform: MemoryPlatform, name = 'memory') {
  const dir = mkdtempSync(join(tmpdir(), 'nb-mgr-'));
  const settings = channelSettingsSchema.parse({ allowFrom: ['*'] });
  return new ChatChannel({
    name,
    platform,
    settings: () => settings,
    pairing: new PairingStore({ dir: join(dir, 'pairing') }),
    mediaDir: join(dir, 'media'),
  });
}

function manage(platforms: MemoryPlatform[], initialMs = 20, startTimeoutMs?: number) {
  const warnings: string[] = [];
  const log = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
  const manager = new ChannelManager({
    bus: new MessageBus(),
    channels: platforms.map((platform, i) => channelOn(platform, `memory${i}`)),
    log,
    backoff: { initialMs, maxMs: 80 * (initialMs / 20), stableMs: 10_000 },
    random: () => 0.5,
    ...(startTimeoutMs ? { startTimeoutMs: () => startTimeoutMs } : {}),
  });
  managers.push(manager);
  manager.start();
  return { manager, warnings };
}

describe('ChannelManager', () => {
  it('retries a channel that cannot connect, with growing delays, until it does', async () => {
    const platform = new MemoryPlatform();
    platform.connectFailures = [new Error('ECONNREFUSED'), new Error('ECONNREFUSED'), new Error('ETIMEDOUT')];
    const { manager, warnings } = manage([platform]);
    await eventually(() => expect(manager.report().memory0?.state).toBe('running'));
    expect(platform.connects).toBe(4);
    expect(manager.report().memory0).toEqual({ state: 'running', restarts: 3 });
    expect(warnings.map((w) => /reconnecting in (\d+) ms/.exec(w)?.[1])).toEqual(['20', '40', '80']);
  });

  it('does not retry a setup mistake, and reports it', async () => {
    // Fake timers: a retry, if one were scheduled, comes due below without anyone waiting for it.
    vi.useFakeTimers();
    const broken = new MemoryPlatform();
    broken.connectFailures = [new UserError('channels.memory.token is not set.', 'Set it.')];
    const healthy = new MemoryPlatform();
    const { manager } = manage([broken, healthy]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(manager.report().memory1?.state).toBe('running');
    expect(manager.report().memory0).toEqual({
      state: 'error',
      error: 'channels.memory.token is not set. Set it.',
      restarts: 0,
    });
    expect(broken.connects).toBe(1);
  });

  it('reconnects a channel that lost its connection, waiting at least as long as the platform asked', async () => {
    // Fake timers: the test moves the clock, so "not before 300 ms" is checked exactly, with no wall clock.
    vi.useFakeTimers();
    const platform = new MemoryPlatform();
    const { manager, warnings } = manage([platform]);
    await vi.advanceTimersByTimeAsync(0);
    expect(manager.report().memory0?.state).toBe('running');
    platform.link?.failed(new Error('409 Conflict: another poller'), 300);
    expect(manager.report().memory0).toMatchObject({ state: 'reconnecting', error: '409 Conflict: another poller' });
    await vi.advanceTimersByTimeAsync(299);
    expect(platform.connects).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(platform.connects).toBe(2);
    await vi.advanceTimersByTimeAsync(0);
    expect(manager.report().memory0).toEqual({ state: 'running', restarts: 1 });
    expect(warnings[0]).toMatch(/409 Conflict: another poller; reconnecting in 300 ms/);
  });

  it('gives up on a start that never finishes at its deadline, says why, retries, and undoes the late connect', async () => {
    const platform = new MemoryPlatform();
    let answer = () => {};
    platform.connectGates = [new Promise<void>((resolve) => (answer = resolve))];
    const { manager, warnings } = manage([platform], 400, 30);
    await eventually(() => expect(manager.report().memory0?.state).toBe('reconnecting'));
    expect(manager.report().memory0).toMatchObject({ error: expect.stringMatching(/did not connect within 30 ms/) });
    expect(manager.report().memory0?.retryAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(warnings[0]).toMatch(
      /channel memory0: did not connect within 30 ms.*; reconnecting in 400 ms \(attempt 1\)/,
    );
    expect(platform.disconnects).toBe(1);
    answer(); // the platform answers late, while the manager waits out its backoff: that connection is closed again
    await eventually(() => expect(platform.disconnects).toBe(2));
    expect(platform.link).toBeUndefined();
    await eventually(() => expect(manager.report().memory0).toEqual({ state: 'running', restarts: 1 }));
    expect(platform.connects).toBe(2);
  });

  it('connects at once, not at the end of its backoff, when the channel says its setup changed (a login elsewhere)', async () => {
    vi.useFakeTimers();
    const platform = new MemoryPlatform();
    platform.connectFailures = [new Error('not logged in'), new Error('not logged in')];
    const { manager } = manage([platform], 60_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(manager.report().memory0?.state).toBe('reconnecting');
    expect(platform.setupWatchers.size).toBe(1);
    for (const changed of platform.setupWatchers) changed();
    await vi.advanceTimersByTimeAsync(0);
    // The second attempt failed too: a new backoff, a new watch (the old one removed), and a change connects again.
    expect(platform.connects).toBe(2);
    expect(platform.setupWatchers.size).toBe(1);
    for (const changed of platform.setupWatchers) changed();
    await vi.advanceTimersByTimeAsync(0);
    expect(manager.report().memory0?.state).toBe('running');
    expect(platform.connects).toBe(3);
    expect(platform.setupWatchers.size).toBe(0);
    // The cancelled backoff timers do not start a fourth connection.
    await vi.advanceTimersByTimeAsync(600_000);
    expect(platform.connects).toBe(3);
  });

  it('stops every channel and cancels pending reconnects', async () => {
    vi.useFakeTimers();
    const platform = new MemoryPlatform();
    platform.connectFailures = [new Error('down')];
    const { manager } = manage([platform], 500);
    await vi.advanceTimersByTimeAsync(0);
    expect(manager.report().memory0?.state).toBe('reconnecting');
    const stopped = manager.stop();
    await vi.advanceTimersByTimeAsync(5_000);
    await stopped;
    // Well past the 500 ms retry: it was cancelled, not merely not yet due.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(platform.connects).toBe(1);
    expect(manager.report().memory0?.state).toBe('stopped');
  });
});

describe('setup errors', () => {
  it('names the package to install when a platform SDK is missing, and the key when a credential is', async () => {
    const missing = Object.assign(new Error("Cannot find package 'grammy'"), { code: 'ERR_MODULE_NOT_FOUND' });
    const error = await channelSdk('telegram', 'Telegram', 'grammy', () => Promise.reject(missing)).catch((e) => e);
    expect(error.message).toBe(
      'The Telegram channel needs the grammy package, which is not installed (optional packages are installed on demand).',
    );
    expect(error.hint).toBe('Install it with: nanobot channels install telegram');
    expect(() => requireSetting('telegram', 'token', '  ', 'Ask @BotFather.')).toThrow(
      'channels.telegram.token is not set, so the telegram channel cannot start.',
    );
  });
});
