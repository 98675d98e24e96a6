/** Discord behaviours beyond the contract, through a real gateway, the real discord.js and the fake Discord. */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../../src/app/gateway.js';
import { loadConfig } from '../../../src/config/load.js';
import { encodeSessionKey } from '../../../src/session/jsonl-store.js';
import { startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { visibleText } from './discord-markdown.js';
import { BOT_ROLE_ID, BOT_USER, startFakeDiscord } from './fake-discord.js';
import { type DiscordGateway, healthOf, OWNER, startDiscordGateway, writeDiscordConfig } from './helpers.js';

const open: DiscordGateway[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(settings: Record<string, unknown> = {}) {
  const run = await startDiscordGateway(settings);
  open.push(run);
  await eventually(async () => expect((await healthOf(run.gateway)).channels.discord).toBe('running'), 10_000);
  return run;
}

const lastUserText = (run: DiscordGateway) =>
  JSON.stringify((run.llm.requests.at(-1)?.body.messages as unknown[] | undefined)?.at(-1));
const shown = (run: DiscordGateway, channelId: string) =>
  run.discord
    .messagesIn(channelId)
    .map((m) => visibleText(m.content))
    .filter(Boolean);
const sessionFiles = (run: DiscordGateway) =>
  readdirSync(join(run.dataDir, 'sessions'), { recursive: true, encoding: 'utf8' });
const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

describe('discord channel', () => {
  it('answers in guild channels only when @mentioned or replied to, without the mention in the text', async () => {
    const run = await start();
    const inGuild = { channelId: '111', kind: 'guild' as const, author: OWNER };
    run.discord.userSays({ ...inGuild, content: 'just chatting among humans' });
    await settle();
    expect(run.llm.requests).toHaveLength(0);

    run.llm.enqueue({ text: 'It is noon.' }, { text: 'You are welcome.' }, { text: 'Role call heard.' });
    run.discord.userSays({ ...inGuild, content: `<@${BOT_USER.id}> what time is it?` });
    await eventually(() => expect(shown(run, '111')).toEqual(['It is noon.']));
    expect(lastUserText(run)).toContain('what time is it?');
    expect(lastUserText(run)).not.toContain(BOT_USER.id);

    const answer = run.discord.messagesIn('111')[0]?.id;
    run.discord.userSays({ ...inGuild, content: 'thanks', replyTo: answer });
    await eventually(() => expect(shown(run, '111')).toEqual(['It is noon.', 'You are welcome.']));
    expect(lastUserText(run)).toContain('[Reply to you: It is noon.]');

    run.discord.userSays({ ...inGuild, content: `<@&${BOT_ROLE_ID}> roll call` });
    await eventually(() => expect(shown(run, '111')).toHaveLength(3));
  });

  it('serves only the guild channels in allowChannels (threads by their parent); direct messages still work', async () => {
    const run = await start({ allowChannels: ['111'] });
    const mention = `<@${BOT_USER.id}> hello`;
    run.discord.userSays({ channelId: '222', kind: 'guild', author: OWNER, content: mention });
    await settle();
    expect(run.llm.requests).toHaveLength(0);

    run.llm.enqueue({ text: 'Hi in 111.' }, { text: 'Hi in the thread.' }, { text: 'Hi in private.' });
    run.discord.userSays({ channelId: '111', kind: 'guild', author: OWNER, content: mention });
    await eventually(() => expect(shown(run, '111')).toEqual(['Hi in 111.']));

    run.discord.addThread('333', '111');
    run.discord.userSays({ channelId: '333', kind: 'guild', author: OWNER, content: mention });
    await eventually(() => expect(shown(run, '333')).toEqual(['Hi in the thread.']));
    // A thread is its own conversation (nanobot's session key).
    const threadSession = `${encodeSessionKey('discord:111:thread:333')}.jsonl`;
    await eventually(() => expect(sessionFiles(run).some((name) => name.endsWith(threadSession))).toBe(true));

    run.discord.userSays({ channelId: OWNER.id, author: OWNER, content: 'hello in private' });
    await eventually(() => expect(shown(run, OWNER.id)).toEqual(['Hi in private.']));
    expect(shown(run, '222')).toEqual([]);
  });

  it('shows "typing…" in the chat while a turn runs', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Thought about it.', delayMs: 800 });
    run.discord.userSays({ channelId: OWNER.id, author: OWNER, content: 'think hard' });
    await eventually(() => expect(shown(run, OWNER.id)).toEqual(['Thought about it.']));
    const routes = run.discord.calls.filter((c) => c.path.startsWith(`/channels/${OWNER.id}/`)).map((c) => c.route);
    expect(routes[0]).toBe('POST /channels/:id/typing');
    expect(routes.indexOf('POST /channels/:id/typing')).toBeLessThan(routes.indexOf('POST /channels/:id/messages'));
  });

  it('downloads an attachment and shows the picture to the model', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'A tiny picture.' });
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]);
    run.discord.userSays({
      channelId: OWNER.id,
      author: OWNER,
      content: 'what is this?',
      attachments: [{ name: 'pic.png', contentType: 'image/png', content: png }],
    });
    await eventually(() => expect(shown(run, OWNER.id)).toEqual(['A tiny picture.']));
    const sent = lastUserText(run);
    expect(sent).toContain('what is this?');
    expect(sent).toContain(`data:image/png;base64,${png.toString('base64')}`);
    const path = /\[image: ([^\]]+)\]/.exec(sent)?.[1] ?? '';
    expect(path.startsWith(join(run.dataDir, 'media', 'discord'))).toBe(true);
    expect(readFileSync(path)).toEqual(png);
  });

  it('sends a file from the message tool as an attachment', async () => {
    const run = await start();
    writeFileSync(join(run.workspace, 'report.txt'), 'quarterly numbers');
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'Here is the report.', media: ['report.txt'] } }] },
      { text: 'Sent it.' },
    );
    run.discord.userSays({ channelId: OWNER.id, author: OWNER, content: 'send me the report' });
    await eventually(() => expect(shown(run, OWNER.id)).toEqual(['Here is the report.', 'Sent it.']));
    const uploads = run.discord.messagesIn(OWNER.id).filter((m) => m.attachments.length > 0);
    expect(uploads.map((m) => m.attachments)).toEqual([[{ filename: 'report.txt', size: 17 }]]);
  });

  it('waits out a 429 rate limit instead of losing the reply', async () => {
    const run = await start();
    run.discord.failNext('POST /channels/:id/messages', {
      status: 429,
      body: { message: 'You are being rate limited.', retry_after: 0.3, global: false },
      headers: { 'retry-after': '0.3', 'x-ratelimit-scope': 'user' },
    });
    run.llm.enqueue({ text: 'Patience pays.' });
    run.discord.userSays({ channelId: OWNER.id, author: OWNER, content: 'hello' });
    await eventually(() => expect(shown(run, OWNER.id)).toEqual(['Patience pays.']));
    expect(run.discord.callsOf('POST /channels/:id/messages')).toHaveLength(2);
  });

  it('resumes a briefly dropped gateway session by itself; what was written meanwhile is replayed', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Still here.' });
    run.discord.gateway.close(4000);
    run.discord.userSays({ channelId: OWNER.id, author: OWNER, content: 'are you there?' });
    await eventually(() => expect(shown(run, OWNER.id)).toEqual(['Still here.']));
    expect(run.discord.gateway.resumes).toHaveLength(1);
    expect(run.discord.gateway.identifies).toHaveLength(1);
    expect((await healthOf(run.gateway)).channelDetails.discord).toMatchObject({ state: 'running', restarts: 0 });
  });
});

describe('discord setup mistakes', () => {
  async function startWith(settings: Record<string, unknown>, fakeOptions = {}) {
    const discord = await startFakeDiscord(fakeOptions);
    const llm = await startFakeLLM();
    try {
      const { configPath, home } = await writeDiscordConfig(discord, llm, settings);
      const loaded = await loadConfig({ configPath, home, env: {} });
      const gateway = await startGateway({ loaded, port: 0, env: {}, watchConfig: false, writeStateFile: false });
      try {
        let details: { state: string; error?: string } | undefined;
        await eventually(async () => {
          details = (await healthOf(gateway)).channelDetails.discord;
          expect(details?.state).toBe('error');
        }, 10_000);
        return details?.error ?? '';
      } finally {
        await gateway.shutdown();
      }
    } finally {
      await discord.close();
      await llm.close();
    }
  }

  it('refuses to start without a token, naming the key', async () => {
    await expect(startWith({ token: '' })).rejects.toThrow(/channels\.discord\.token is not set/);
  });

  it('refuses a plain-http apiBase that is not on this machine (the token travels with every request)', async () => {
    await expect(startWith({ apiBase: 'http://discord.example.com/api' })).rejects.toThrow(/must be an https:\/\/ URL/);
  });

  it('refuses channel ids written as JSON numbers too long to be exact', async () => {
    // What JSON.parse makes of an unquoted 19-digit id: a double past 2^53, its last digits gone.
    await expect(startWith({ allowChannels: [2 ** 60] })).rejects.toThrow(/write Discord ids in quotes/);
  });

  it('says plainly when Discord rejects the token', async () => {
    expect(await startWith({ token: 'not-the-token' })).toMatch(/rejected channels\.discord\.token/);
  });

  it('says how to enable the Message Content intent when Discord refuses it', async () => {
    expect(await startWith({}, { refusedIntents: 1 << 15 })).toMatch(/Message Content Intent/);
  });
});
