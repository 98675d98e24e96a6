/** The Matrix channel on its own (no agent): streaming edits, rate limits, password login, setup mistakes, logging. */
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MessageBus } from '../../../src/bus/message-bus.js';
import { matrixChannel } from '../../../src/channels/matrix/index.js';
import { PairingStore } from '../../../src/channels/pairing.js';
import { type Logger, silentLogger } from '../../../src/util/log.js';
import { eventually } from '../contract.js';
import { type FakeHomeserver, startFakeHomeserver } from './fake-homeserver.js';
import { OWNER } from './helpers.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function fakeHomeserver(): Promise<FakeHomeserver> {
  const hs = await startFakeHomeserver();
  cleanup.push(() => hs.close());
  return hs;
}

async function channelOn(
  hs: FakeHomeserver,
  settings: Record<string, unknown> = {},
  options: { dataDir?: string; log?: Logger } = {},
) {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'nb-mx-'));
  const block = {
    homeserver: hs.url,
    userId: hs.botId,
    accessToken: hs.token,
    allowFrom: ['*'],
    streaming: true,
    streamEditInterval: 0.05,
    ...settings,
  };
  const channel = await matrixChannel.create({
    block: () => block,
    switches: () => ({ sendProgress: true, sendToolHints: true, showReasoning: true }),
    pairing: new PairingStore({ dir: join(dataDir, 'pairing') }),
    dataDir,
    log: options.log ?? silentLogger,
    commands: () => [],
  });
  return { channel, dataDir, start: () => channel.start(new MessageBus()) };
}

async function connected(hs: FakeHomeserver, settings: Record<string, unknown> = {}) {
  const made = await channelOn(hs, settings);
  await made.start();
  cleanup.push(() => made.channel.stop());
  return made;
}

describe('matrix adapter', () => {
  it('streams a reply by editing one message with m.replace, then writes the final HTML into it', async () => {
    const hs = await fakeHomeserver();
    const room = hs.createRoom({ members: [OWNER] });
    const { channel } = await connected(hs);
    const send = (content: string, metadata: Record<string, unknown>) =>
      channel.send({ channel: 'matrix', chatId: room, content, metadata });
    const stream = { _stream_delta: true, _stream_id: 's1' };
    await send('Counting: ', stream);
    await eventually(() => expect(hs.messagesIn(room)).toHaveLength(1));
    // Each delta is waited for until the edit shows it (a gate on the fake's state, not a guessed delay).
    for (const [n, shown] of [
      ['one, ', 'one'],
      ['two, ', 'two'],
      ['**three**', 'three'],
    ] as const) {
      await send(n, stream);
      await eventually(() => expect(JSON.stringify(hs.messagesIn(room)[0])).toContain(shown));
    }
    await send('Counting: one, two, **three**', { _stream_id: 's1' });
    const [message] = hs.messagesIn(room);
    expect(hs.messagesIn(room)).toHaveLength(1);
    expect(message?.edits).toBeGreaterThanOrEqual(2);
    expect(message?.content).toMatchObject({
      body: 'Counting: one, two, three',
      formatted_body: '<p>Counting: one, two, <strong>three</strong></p>',
    });
    const edit = hs.eventsIn(room).findLast((e) => e.sender === hs.botId)?.content;
    expect(edit).toMatchObject({
      body: '* Counting: one, two, three',
      'm.relates_to': { rel_type: 'm.replace', event_id: message?.eventId },
    });
  });

  it('waits out a rate limit and resends with the same transaction id', async () => {
    const hs = await fakeHomeserver();
    const room = hs.createRoom({ members: [OWNER] });
    const { channel } = await connected(hs);
    hs.failNext('send', { status: 429, errcode: 'M_LIMIT_EXCEEDED', retryAfterMs: 200 });
    await channel.send({ channel: 'matrix', chatId: room, content: 'patience' });
    const sends = hs.requests.filter((r) => r.kind === 'send');
    expect(sends).toHaveLength(2);
    expect(sends[0]?.path).toBe(sends[1]?.path);
    expect(hs.messagesIn(room).map((m) => m.content.body)).toEqual(['patience']);
  });

  it('logs in with a password once and reuses the saved session; a revoked one is replaced', async () => {
    const hs = await fakeHomeserver();
    const settings = { accessToken: '', password: 'hunter2' };
    const first = await channelOn(hs, settings);
    await first.start();
    await first.channel.stop();
    const sessionFile = join(first.dataDir, 'matrix', 'session.json');
    expect(statSync(sessionFile).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(sessionFile, 'utf8'))).toMatchObject({ userId: hs.botId, deviceId: 'DEV1' });

    const second = await channelOn(hs, settings, { dataDir: first.dataDir });
    await second.start();
    await second.channel.stop();
    expect(hs.requests.filter((r) => r.kind === 'login')).toHaveLength(1);

    hs.revokeTokens();
    const third = await channelOn(hs, settings, { dataDir: first.dataDir });
    await third.start();
    await third.channel.stop();
    expect(hs.requests.filter((r) => r.kind === 'login')).toHaveLength(2);
  });

  it('names a damaged saved session and what is wrong, then logs in with the password again', async () => {
    const hs = await fakeHomeserver();
    const settings = { accessToken: '', password: 'hunter2' };
    const dataDir = mkdtempSync(join(tmpdir(), 'nb-mx-'));
    const sessionFile = join(dataDir, 'matrix', 'session.json');
    mkdirSync(join(dataDir, 'matrix'));
    const damaged = ['{"accessToken":', JSON.stringify({ homeserver: hs.url, userId: hs.botId, accessToken: 7 })];
    for (const [i, text] of damaged.entries()) {
      writeFileSync(sessionFile, text);
      const warnings: string[] = [];
      const log = { ...silentLogger, warn: (line: string) => void warnings.push(line) };
      const { channel, start } = await channelOn(hs, settings, { dataDir, log });
      await start();
      await channel.stop();
      expect(hs.requests.filter((r) => r.kind === 'login')).toHaveLength(i + 1);
      expect(warnings).toEqual([
        i === 0
          ? expect.stringContaining(`Matrix session file ${sessionFile} is not valid JSON: `)
          : expect.stringMatching(/session\.json has the wrong shape: accessToken: .*expected string, received number/),
      ]);
      expect(warnings[0]).toMatch(/; logging in with the password again$/);
    }
  });

  it('keeps the SDK’s console chatter out of sight, and in the debug log', async () => {
    const hs = await fakeHomeserver();
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((method) =>
      vi.spyOn(console, method).mockImplementation(() => undefined),
    );
    const debug: string[] = [];
    const log = { ...silentLogger, debug: (line: string) => debug.push(line) };
    const { channel, start } = await channelOn(hs, {}, { log });
    await start();
    cleanup.push(() => channel.stop());
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    expect(debug.some((line) => line.includes('matrix-js-sdk:'))).toBe(true);
  });
});

describe('matrix setup mistakes', () => {
  const startWith = async (hs: FakeHomeserver, settings: Record<string, unknown>) => {
    const { channel, start } = await channelOn(hs, settings);
    cleanup.push(() => channel.stop());
    await start();
  };

  it('names a rejected access token (not retried as a network problem)', async () => {
    const hs = await fakeHomeserver();
    await expect(startWith(hs, { accessToken: 'syt_wrong' })).rejects.toThrow(/rejected the access token/);
  });

  it('notices a token that belongs to another account', async () => {
    const hs = await fakeHomeserver();
    await expect(startWith(hs, { userId: '@someone_else:localhost' })).rejects.toThrow(
      /belongs to @nanobot:localhost, not to channels\.matrix\.userId/,
    );
  });

  it('refuses a wrong password clearly', async () => {
    const hs = await fakeHomeserver();
    await expect(startWith(hs, { accessToken: '', password: 'wrong' })).rejects.toThrow(/refused the login/);
  });

  it('checks the credentials with `nanobot channels login matrix`', async () => {
    const hs = await fakeHomeserver();
    const dataDir = mkdtempSync(join(tmpdir(), 'nb-mx-'));
    const out: string[] = [];
    const login = (block: Record<string, unknown>) =>
      matrixChannel.login?.(
        { homeserver: hs.url, userId: hs.botId, ...block },
        { name: 'matrix', dataDir, log: silentLogger, out: (text) => out.push(text) },
      );
    await login({ password: 'hunter2' });
    expect(out.join('')).toMatch(
      /signed in to .* as @nanobot:localhost, device DEV1\. The session is saved in .*session\.json/,
    );
    await expect(login({ accessToken: 'syt_wrong' })).rejects.toThrow(/rejected the access token \(M_UNKNOWN_TOKEN\)/);
  });

  it('checks the settings before anything connects', () => {
    const parse = (block: Record<string, unknown>) => () => matrixChannel.parse({ enabled: true, ...block });
    expect(parse({ userId: '@bot:example.org' })).toThrow(/channels\.matrix\.accessToken is not set/);
    expect(parse({ accessToken: 'x' })).toThrow(/channels\.matrix\.userId is not set/);
    expect(parse({ accessToken: 'x', userId: 'bot' })).toThrow(/full Matrix ID/);
    expect(parse({ accessToken: 'x', userId: '@bot:example.org', homeserver: 'http://matrix.example.org' })).toThrow(
      /must be an https:\/\/ URL/,
    );
    const settings = matrixChannel.parse({ accessToken: 'x', userId: '@bot:example.org' });
    expect(settings).toMatchObject({ homeserver: 'https://matrix.org', groupPolicy: 'open', streaming: false });
  });
});
