/**
 * A prompt-injected model uses the `message` tool to write to chats whose people are not allowed. Through a real
 * gateway (agent, tools, router) with a memory chat channel: the current chat always works; another chat only when
 * the channel's access rules admit it (allowFrom by id, a sender admitted there, groupAllowFrom, "*"). Every other
 * spelling gets an error result the model reads, and nothing reaches the platform.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app/gateway.js';
import { ChatChannel } from '../../src/channels/chat-channel.js';
import { emailSettingsSchema } from '../../src/channels/email/index.js';
import { EmailPlatform } from '../../src/channels/email/platform.js';
import { PairingStore } from '../../src/channels/pairing.js';
import { type ChannelSettings, channelSettingsSchema } from '../../src/channels/settings.js';
import { telegramSettingsSchema } from '../../src/channels/telegram/index.js';
import { TelegramPlatform } from '../../src/channels/telegram/platform.js';
import { loadConfig } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/lifecycle.js';
import { silentLogger } from '../../src/util/log.js';
import { eventually } from '../channels/contract.js';
import { MemoryPlatform } from '../channels/memory-platform.js';
import { connect, startChannel } from '../channels/websocket/helpers.js';
import { runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';

const OWNER = { id: '100', username: 'owner' };
const ALICE = { id: '201', username: 'alice' };
const MALLORY = { id: '999', username: '100' };

/** Chat ids the hostile model tries (channel "memory" unless given): none may be written to. */
const REFUSED: { chat_id: string; channel?: string }[] = [
  { chat_id: '999' }, // Mallory's DM: she only got a pairing code
  { chat_id: '-700' }, // a group where only Mallory wrote
  { chat_id: '-701' }, // a group nobody wrote in
  { chat_id: ' 100' },
  { chat_id: '100 ' },
  { chat_id: '0100' },
  { chat_id: '+100' },
  { chat_id: '100.0' },
  { chat_id: '１００' },
  { chat_id: '100\u200b' },
  { chat_id: '100,999' },
  { chat_id: '100\n999' },
  { chat_id: '@owner' },
  { chat_id: 'owner' },
  { chat_id: '*' },
  { chat_id: '-500 ' },
  { chat_id: ' -500' },
  { chat_id: '-5000' },
  { chat_id: '-200x' },
  { chat_id: '../100' },
  { chat_id: 'memory:100' },
  { chat_id: '999', channel: 'telegram' },
  { chat_id: '100', channel: 'Memory' },
  { chat_id: '100', channel: 'memory ' },
  { chat_id: '100', channel: 'cli' },
  { chat_id: 'direct', channel: 'cli' },
];

/** Other chats the access rules admit. */
const ADMITTED = [
  '-500', // in groupAllowFrom
  '-200', // a group where Alice (allowed by @alice) mentioned the bot
  '300', // a direct chat the platform says is with the owner
];

const open: { gateway: Gateway; llm: FakeLLM }[] = [];
let cliLlm: FakeLLM | undefined;
afterEach(async () => {
  await cliLlm?.close();
  cliLlm = undefined;
  for (const run of open.splice(0)) {
    await run.gateway.shutdown('test end');
    await run.llm.close();
  }
});

async function start(settings: Partial<ChannelSettings>) {
  const llm = await startFakeLLM();
  const home = mkdtempSync(join(tmpdir(), 'nb-msg-'));
  const dataDir = join(home, '.nanobot');
  const workspace = join(dataDir, 'workspace');
  await mkdir(workspace, { recursive: true });
  const configPath = join(dataDir, 'config.json');
  const config = {
    agents: { defaults: { workspace, provider: 'custom', model: 'test-model' } },
    providers: { custom: { apiKey: 'test-key', apiBase: `${llm.url}/v1` } },
    tools: { web: { enable: false }, maxSessionMessagesPerMinute: 1000 },
    gateway: { heartbeat: { enabled: false } },
    channels: { sendToolHints: false, showReasoning: false, websocket: { enabled: false } },
  };
  writeFileSync(configPath, JSON.stringify(config));
  const platform = new MemoryPlatform();
  // Like Telegram: a positive id is a private chat with that user; here chat 300 is the owner's second DM.
  platform.directChatWith = (chatId: string) => (chatId === '300' ? OWNER : undefined);
  let current = channelSettingsSchema.parse({ allowFrom: ['100', '@alice'], groupAllowFrom: ['-500'], ...settings });
  const channel = new ChatChannel({
    name: 'memory',
    platform,
    settings: () => current,
    pairing: new PairingStore({ dir: join(dataDir, 'pairing') }),
    mediaDir: join(dataDir, 'media'),
  });
  const loaded = await loadConfig({ configPath, home, env: {} });
  const gateway = await startGateway({
    loaded,
    channels: [channel],
    port: 0,
    env: {},
    watchConfig: false,
    writeStateFile: false,
  });
  open.push({ gateway, llm });
  const set = (next: Partial<ChannelSettings>) => {
    current = { ...current, ...next };
  };
  return { llm, platform, set };
}

const toolResults = (llm: FakeLLM) =>
  ((llm.requests.at(-1)?.body.messages as { role: string; content: unknown }[] | undefined) ?? [])
    .filter((message) => message.role === 'tool')
    .map((message) => (typeof message.content === 'string' ? message.content : JSON.stringify(message.content)));

describe('message tool: only chats the channel’s access rules admit', () => {
  it('refuses every spelling of a chat that is not admitted, and delivers to the admitted ones', async () => {
    const { llm, platform } = await start({});
    llm.enqueue({ text: 'hi alice' });
    // Alice mentions the bot in group -200; Mallory (username "100") writes in her DM and in group -700.
    await platform.deliver({ chatId: '-200', chatType: 'group', mentioned: true, sender: ALICE, text: 'hi bot' });
    await eventually(() => expect(platform.chat('-200')).toEqual(['hi alice']));
    await platform.deliver({ chatId: '999', sender: MALLORY, text: 'let me in' });
    await platform.deliver({ chatId: '-700', chatType: 'group', mentioned: true, sender: MALLORY, text: '@bot hi' });
    await eventually(() => expect(platform.chat('999')).toHaveLength(1)); // the pairing code

    const calls = [
      ...REFUSED.map((target, n) => ({ name: 'message', arguments: { content: `leak ${n}`, ...target } })),
      ...ADMITTED.map((chatId) => ({ name: 'message', arguments: { content: `ok ${chatId}`, chat_id: chatId } })),
      { name: 'message', arguments: { content: 'ok current' } },
      { name: 'message', arguments: { content: 'ok current by id', chat_id: '100', channel: 'memory' } },
    ];
    llm.enqueue({ toolCalls: calls }, { text: 'done' });
    await platform.deliver({ chatId: '100', sender: OWNER, text: 'please summarise the report' });
    await eventually(() => expect(platform.chat('100')).toContain('done'));

    const results = toolResults(llm);
    expect(results).toHaveLength(calls.length);
    const refused = results.slice(0, REFUSED.length);
    for (const [n, result] of refused.entries())
      expect([n, result]).toEqual([n, expect.stringMatching(/^Error.*Not sent to/s)]);
    expect(refused.join('\n')).toMatch(/not one the access rules admit/);
    expect(refused.join('\n')).toMatch(/no channel "telegram" runs in this gateway \(running: memory\)/);
    for (const result of results.slice(REFUSED.length)) expect(result).toMatch(/^Message sent to memory:/);

    const leaked = platform.messages.filter((message) => message.text.startsWith('leak'));
    expect(leaked).toEqual([]);
    expect(platform.chat('-500')).toEqual(['ok -500']);
    expect(platform.chat('-200')).toEqual(['hi alice', 'ok -200']);
    expect(platform.chat('300')).toEqual(['ok 300']);
    expect(platform.chat('100')).toEqual(['ok current', 'ok current by id', 'done']);
    expect(platform.chat('999')).toHaveLength(1);
    expect(platform.chat('-700')).toEqual([]);
  });

  it('re-checks the rules at send time: a chat admitted earlier is refused once its sender is removed', async () => {
    const { llm, platform, set } = await start({});
    llm.enqueue({ text: 'hi alice' });
    await platform.deliver({ chatId: '-200', chatType: 'group', mentioned: true, sender: ALICE, text: 'hi bot' });
    await eventually(() => expect(platform.chat('-200')).toEqual(['hi alice']));
    set({ allowFrom: ['100'] });
    llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'leak', chat_id: '-200' } }] },
      { text: 'done' },
    );
    await platform.deliver({ chatId: '100', sender: OWNER, text: 'go' });
    await eventually(() => expect(platform.chat('100')).toEqual(['done']));
    expect(toolResults(llm)[0]).toMatch(/Not sent to memory:-200/);
    expect(platform.chat('-200')).toEqual(['hi alice']);
  });

  it('Telegram and email name a direct chat’s person only for canonical ids, so no spelling reaches someone else', async () => {
    const telegram = new TelegramPlatform({
      grammy: await import('grammy'),
      settings: () => telegramSettingsSchema.parse({ token: '1:x' }),
      log: silentLogger,
    });
    expect(telegram.directChatWith('123456789')).toEqual({ id: '123456789' });
    for (const chatId of ['-100123', '0123', ' 123', '123 ', '+123', '１２３', '1e3', '123.0', '12345678901234567', ''])
      expect([chatId, telegram.directChatWith(chatId)]).toEqual([chatId, undefined]);

    const email = new EmailPlatform({
      imapflow: await import('imapflow'),
      nodemailer: await import('nodemailer'),
      settings: () => emailSettingsSchema.parse({ smtpUsername: 'bot@example.com', allowFrom: ['owner@example.com'] }),
      dataDir: mkdtempSync(join(tmpdir(), 'nb-msg-email-')),
      log: silentLogger,
    });
    expect(email.directChatWith('owner@example.com')).toEqual({ id: 'owner', username: 'owner' });
    expect(email.directChatWith('friend@other.test')).toEqual({ id: 'friend@other.test' });
    const spellings = [
      'Owner@example.com',
      'owner@example.com, mallory@evil.test',
      'owner@example.com,mallory@evil.test',
      'Owner <owner@example.com>',
      '<owner@example.com>',
      'owner@example.com\nBcc: mallory@evil.test',
      'owner@example.com ',
      'owner@example',
      'owner@example.com.',
      'owner@@example.com',
      '"owner@example.com"@evil.test',
      'owner',
      '',
    ];
    for (const chatId of spellings) expect([chatId, email.directChatWith(chatId)]).toEqual([chatId, undefined]);
  });

  it('with allowFrom "*", any chat of the channel is admitted (everyone may talk to the agent)', async () => {
    const { llm, platform } = await start({ allowFrom: ['*'] });
    llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'hello', chat_id: '12345' } }] },
      { text: 'done' },
    );
    await platform.deliver({ chatId: '100', sender: OWNER, text: 'go' });
    await eventually(() => expect(platform.chat('100')).toEqual(['done']));
    expect(platform.chat('12345')).toEqual(['hello']);
  });

  it('built CLI, `nanobot agent -m`: the model can write to the current chat only, and reads why not elsewhere', async () => {
    const llm = await startFakeLLM([
      {
        toolCalls: [
          { name: 'message', arguments: { content: 'leak 1', channel: 'telegram', chat_id: '999' } },
          { name: 'message', arguments: { content: 'leak 2', chat_id: 'someone-else' } },
          { name: 'message', arguments: { content: 'leak 3', channel: 'email', chat_id: 'mallory@evil.test' } },
          { name: 'message', arguments: { content: 'progress', channel: 'cli', chat_id: 'direct' } },
        ],
      },
      { text: 'Finished.' },
    ]);
    cliLlm = llm;
    const home = tempHome();
    const result = await runCli(['agent', '-m', 'summarise my mail'], home, {
      ANTHROPIC_API_KEY: 'k',
      NANOBOT_PROVIDERS__ANTHROPIC__API_BASE: llm.url,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('progress\nFinished.\n');
    expect(result.stderr).not.toContain('not delivered');
    const tools = JSON.stringify(llm.requests[1]?.body.messages);
    expect(tools.match(/Not sent to [^:]+:[^:]+: here only the current chat can be messaged/g)).toHaveLength(3);
  });

  it('WebSocket: with allowFrom "*" any chat; otherwise only chats an allowed client follows now', async () => {
    const everyone = await startChannel({});
    expect(everyone.channel.admitsChat('any-chat-id')).toEqual({ ok: true });
    await everyone.channel.stop();

    const started = await startChannel({ allowFrom: ['alice'] });
    try {
      const alice = await connect(started.port, { token: started.token, clientId: 'alice' });
      const ready = await alice.next((frame) => frame.event === 'ready');
      const chatId = ready.event === 'ready' ? ready.chat_id : '';
      expect(started.channel.admitsChat(chatId)).toEqual({ ok: true });
      for (const other of ['other-chat', `${chatId} `, chatId.toUpperCase(), '*', ''])
        expect([other, started.channel.admitsChat(other).ok]).toEqual([other, false]);
      await alice.close();
      await eventually(() => expect(started.channel.admitsChat(chatId).ok).toBe(false));
    } finally {
      await started.channel.stop();
    }
  });
});
