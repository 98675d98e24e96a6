/** The Discord adapter alone (no gateway around it): the real discord.js against the fake Discord. */
import { mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { discordSettingsSchema } from '../../../src/channels/discord/index.js';
import { DiscordPlatform } from '../../../src/channels/discord/platform.js';
import type { IncomingMessage } from '../../../src/channels/platform.js';
import { silentLogger } from '../../../src/util/log.js';
import { eventually } from '../contract.js';
import { BOT_USER, type FakeDiscord, GUILD_ID, startFakeDiscord } from './fake-discord.js';

const OWNER = { id: '501', username: 'owner_user' };

interface Connected {
  discord: FakeDiscord;
  platform: DiscordPlatform;
  received: IncomingMessage[];
  failures: { error: Error; retryAfterMs: number | undefined }[];
}

const open: Connected[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) {
    await run.platform.disconnect();
    await run.discord.close();
  }
});

async function connect(settings: Record<string, unknown> = {}): Promise<Connected> {
  const discord = await startFakeDiscord();
  const parsed = discordSettingsSchema.parse({ token: discord.token, apiBase: discord.apiBase, ...settings });
  const platform = new DiscordPlatform({
    discord: await import('discord.js'),
    settings: () => parsed,
    log: silentLogger,
  });
  const run: Connected = { discord, platform, received: [], failures: [] };
  open.push(run);
  await platform.connect({
    receive: async (message) => void run.received.push(message),
    failed: (error, retryAfterMs) => void run.failures.push({ error, retryAfterMs }),
    commands: () => [],
    log: silentLogger,
  });
  return run;
}

describe('discord platform', () => {
  it('turns direct, guild and thread messages into what the framework needs', async () => {
    const run = await connect();
    run.discord.userSays({ channelId: '77', author: OWNER, content: 'hello privately' });
    run.discord.userSays({ channelId: '111', kind: 'guild', author: { id: '600', username: 'friend' }, content: 'hi' });
    run.discord.userSays({
      channelId: '111',
      kind: 'guild',
      author: OWNER,
      content: `<@${BOT_USER.id}> say hi to <@600>`,
    });
    run.discord.addThread('333', '111');
    run.discord.userSays({ channelId: '333', kind: 'guild', author: OWNER, content: 'in a thread' });
    await eventually(() => expect(run.received).toHaveLength(4));
    // Chats do not wait for each other: order holds within a chat only.
    const byText = (start: string) => run.received.find((m) => m.text.startsWith(start));
    const [direct, unaddressed, addressed, inThread] = ['hello', 'hi', 'say hi', 'in a thread'].map(byText);
    expect(direct).toMatchObject({
      chatId: '77',
      chatType: 'direct',
      mentioned: true,
      text: 'hello privately',
      sender: { id: '501', username: 'owner_user', name: 'owner_user' },
    });
    expect(unaddressed).toMatchObject({ chatId: '111', chatType: 'group', mentioned: false, text: 'hi' });
    expect(addressed).toMatchObject({ mentioned: true, text: 'say hi to @friend', metadata: { guild_id: GUILD_ID } });
    expect(inThread).toMatchObject({
      chatId: '333',
      threadId: '333',
      sessionKey: 'discord:111:thread:333',
      metadata: { parent_channel_id: '111' },
    });
  });

  it('sends without pinging anyone, quotes when asked, and edits; a 429 on an edit is waited out', async () => {
    const run = await connect();
    run.discord.userSays({ channelId: '77', author: OWNER, content: 'hi' });
    await eventually(() => expect(run.received).toHaveLength(1));
    const quoted = run.received[0]?.id ?? '';

    const id = await run.platform.sendText(
      { chatId: '77', replyTo: quoted },
      { text: 'draft @everyone', markdown: '' },
    );
    const posted = run.discord.callsOf('POST /channels/:id/messages')[0]?.body;
    expect(posted).toMatchObject({
      allowed_mentions: { parse: [], replied_user: false },
      message_reference: { message_id: quoted, fail_if_not_exists: false },
    });

    run.discord.failNext('PATCH /channels/:id/messages/:id', {
      status: 429,
      body: { message: 'You are being rate limited.', retry_after: 0.2, global: false },
      headers: { 'retry-after': '0.2', 'x-ratelimit-scope': 'user' },
    });
    await run.platform.editText({ chatId: '77' }, id, { text: 'final answer', markdown: 'final answer' });
    expect(run.discord.messagesIn('77').map((m) => [m.content, m.edits])).toEqual([['final answer', 1]]);
    expect(run.discord.callsOf('PATCH /channels/:id/messages/:id')).toHaveLength(2);
  });

  it('refuses a file over Discord’s 10 MB upload limit with a clear error', async () => {
    const run = await connect();
    run.discord.userSays({ channelId: '77', author: OWNER, content: 'hi' });
    await eventually(() => expect(run.received).toHaveLength(1));
    const path = join(mkdtempSync(join(tmpdir(), 'nb-discord-file-')), 'big.bin');
    writeFileSync(path, '');
    truncateSync(path, 11 * 1024 * 1024);
    await expect(run.platform.sendFile({ chatId: '77' }, { path, name: 'big.bin', kind: 'file' })).rejects.toThrow(
      /big\.bin is 11\.0 MB; Discord bots may upload at most 10 MB/,
    );
    expect(run.discord.callsOf('POST /channels/:id/messages')).toHaveLength(0);
  });

  it('reports a close code that retrying cannot fix, and waits long before trying again', async () => {
    const run = await connect();
    run.discord.gateway.close(4004);
    await eventually(() => expect(run.failures).toHaveLength(1));
    expect(run.failures[0]?.error.message).toMatch(/rejected the bot token \(4004\)/);
    expect(run.failures[0]?.retryAfterMs).toBe(300_000);
  });

  it('fetches what was missed when discord.js starts a new session by itself (no resume, no report)', async () => {
    const run = await connect();
    run.discord.userSays({ channelId: '77', author: OWNER, content: 'before' });
    await eventually(() => expect(run.received).toHaveLength(1));
    // A 1000 close ends the session: discord.js identifies again (after its 5 s identify throttle), and Discord
    // replays nothing.
    run.discord.gateway.close(1000);
    run.discord.userSays({ channelId: '77', author: OWNER, content: 'in the gap' });
    await eventually(() => expect(run.received.map((m) => m.text)).toEqual(['before', 'in the gap']), 20_000);
    expect(run.discord.gateway.identifies).toHaveLength(2);
    expect(run.discord.gateway.resumes).toHaveLength(0);
    expect(run.failures).toEqual([]);
  });

  it('reports a lost connection when resuming fails, and a new session fetches what was missed', async () => {
    const run = await connect();
    run.discord.userSays({ channelId: '77', author: OWNER, content: 'before' });
    await eventually(() => expect(run.received).toHaveLength(1));
    run.discord.drop();
    await eventually(() => expect(run.failures).toHaveLength(1), 10_000);
    expect(run.failures[0]?.error.message).toMatch(/reconnecting failed/);

    // What the manager does next: a new client, a new session (not a resume).
    await run.platform.disconnect();
    run.discord.userSays({ channelId: '77', author: OWNER, content: 'while away 1' });
    run.discord.userSays({ channelId: '77', author: OWNER, content: 'while away 2' });
    run.discord.restore();
    await run.platform.connect({
      receive: async (message) => void run.received.push(message),
      failed: () => undefined,
      commands: () => [],
      log: silentLogger,
    });
    await eventually(() => expect(run.received.map((m) => m.text)).toEqual(['before', 'while away 1', 'while away 2']));
    expect(run.discord.gateway.identifies).toHaveLength(2);
  });
});
