/** Telegram behaviours beyond the contract, through a real gateway, the real grammy and the fake Bot API. */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../../src/app/gateway.js';
import { PairingStore } from '../../../src/channels/pairing.js';
import { loadConfig } from '../../../src/config/load.js';
import { makePdf } from '../../helpers/documents.js';
import { startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { startFakeBotApi } from './fake-bot-api.js';
import { healthOf, OWNER, startTelegramGateway, type TelegramGateway, writeTelegramConfig } from './helpers.js';
import { visibleText } from './telegram-html.js';

const open: TelegramGateway[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(telegram: Record<string, unknown> = {}, channels: Record<string, unknown> = {}) {
  const run = await startTelegramGateway(telegram, channels);
  open.push(run);
  await eventually(async () => expect((await healthOf(run.gateway)).channels.telegram).toBe('running'));
  return run;
}

const lastUserText = (run: TelegramGateway, n = -1) =>
  JSON.stringify((run.llm.requests.at(n)?.body.messages as unknown[] | undefined)?.at(-1));
const shown = (run: TelegramGateway, chatId: number) => run.api.messagesIn(chatId).map((m) => visibleText(m.text));

describe('telegram channel', () => {
  it('answers in groups only when @mentioned or replied to, without the @handle in the text', async () => {
    const run = await start();
    const group = { chatId: -100, chatType: 'group' as const, from: OWNER };
    // No sleep: the mention below is the sentinel. Updates arrive in order, so a turn for this message would have
    // been the first model request, and the mention's answer would not be the only one.
    run.api.userSays({ ...group, text: 'just chatting among humans' });

    run.llm.enqueue({ text: 'It is noon.' }, { text: 'You are welcome.' });
    run.api.userSays({
      ...group,
      text: '@nano_test_bot what time is it?',
      entities: [{ type: 'mention', offset: 0, length: 14 }],
    });
    await eventually(() => expect(shown(run, -100)).toEqual(['It is noon.']));
    expect(run.llm.requests).toHaveLength(1);
    expect(lastUserText(run)).toContain('what time is it?');
    expect(lastUserText(run)).not.toContain('@nano_test_bot');

    run.api.userSays({ ...group, text: 'thanks', replyToBot: true });
    await eventually(() => expect(shown(run, -100)).toEqual(['It is noon.', 'You are welcome.']));
  });

  it('registers the agent’s commands as the bot menu and maps /start and /dream_log back', async () => {
    const run = await start();
    const menu = run.api.callsOf('setMyCommands')[0]?.params.commands as { command: string }[];
    const names = menu.map((c) => c.command);
    expect(names).toEqual(expect.arrayContaining(['new', 'stop', 'help', 'pairing', 'dream_log']));
    run.api.userSays({ chatId: OWNER.id, from: OWNER, text: '/start' });
    await eventually(() => expect(shown(run, OWNER.id).join('\n')).toContain('/pairing'));
    expect(run.llm.requests).toHaveLength(0);
  });

  it('lets the owner approve a pairing code from the chat; the new user is told and let in', async () => {
    const run = await start();
    const stranger = { id: 888, username: 'newcomer' };
    run.api.userSays({ chatId: stranger.id, from: stranger, text: 'hello?' });
    await eventually(() =>
      expect(shown(run, stranger.id).join('')).toMatch(/pairing code is: ([A-Z2-9]{4}-[A-Z2-9]{4})/),
    );
    const code = /([A-Z2-9]{4}-[A-Z2-9]{4})/.exec(shown(run, stranger.id).join(''))?.[1];

    run.api.userSays({ chatId: OWNER.id, from: OWNER, text: `/pairing approve ${code}` });
    await eventually(() =>
      expect(shown(run, OWNER.id)).toEqual(['Approved @newcomer (888) on telegram. They can talk to the agent now.']),
    );
    await eventually(() =>
      expect(shown(run, stranger.id).at(-1)).toBe('You are approved: you can talk to the agent now.'),
    );
    // nanobot's pairing.json: approved senders as a list per channel.
    const stored = JSON.parse(readFileSync(join(run.dataDir, 'pairing.json'), 'utf8'));
    expect(stored.approved).toEqual({ telegram: ['888'] });

    run.llm.enqueue({ text: 'Hi newcomer!' });
    run.api.userSays({ chatId: stranger.id, from: stranger, text: 'hi again' });
    await eventually(() => expect(shown(run, stranger.id).at(-1)).toBe('Hi newcomer!'));
    expect(new PairingStore({ dir: join(run.dataDir, 'pairing') }).isApproved('telegram', '888')).toBe(true);
  });

  it('downloads a photo via getFile and shows it to the model', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'A tiny picture.' });
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4]);
    run.api.userSays({ chatId: OWNER.id, from: OWNER, caption: 'what is this?', photo: { content: jpeg } });
    await eventually(() => expect(shown(run, OWNER.id)).toEqual(['A tiny picture.']));
    const sent = lastUserText(run);
    expect(sent).toContain('what is this?');
    expect(sent).toContain(`data:image/jpeg;base64,${jpeg.toString('base64')}`);
    const path = /\[image: ([^\]]+)\]/.exec(sent)?.[1] ?? '';
    expect(path.startsWith(join(run.dataDir, 'media', 'telegram'))).toBe(true);
    expect(readFileSync(path)).toEqual(jpeg);
    // The session keeps the path, not the picture.
    const files = readdirSync(join(run.dataDir, 'sessions'), { recursive: true, encoding: 'utf8' });
    const session = files
      .filter((name) => name.endsWith('.jsonl'))
      .map((name) => readFileSync(join(run.dataDir, 'sessions', name), 'utf8'))
      .join('\n');
    expect(session).toContain('[image: ');
    expect(session).not.toContain('base64');
  });

  it('downloads a document the agent can then read by its path', async () => {
    const run = await start();
    run.llm.enqueue(
      (body) => {
        const path = /\[file: ([^\]]+)\]/.exec(JSON.stringify(body.messages))?.[1] ?? '';
        return { toolCalls: [{ name: 'read_file', arguments: { path } }] };
      },
      { text: 'It is a shopping list.' },
    );
    const content = Buffer.from('milk\neggs\n');
    run.api.userSays({ chatId: OWNER.id, from: OWNER, document: { content, name: 'list.txt', mime: 'text/plain' } });
    await eventually(() => expect(shown(run, OWNER.id)).toEqual(['It is a shopping list.']));
    expect(JSON.stringify(run.llm.requests[1]?.body.messages)).toContain('milk');
  });

  it('hands a PDF over by path with a note, and the agent reads the page it wants with read_file', async () => {
    const run = await start();
    run.llm.enqueue(
      (body) => {
        const path = /\[file: ([^\]]+\.pdf)\]/.exec(JSON.stringify(body.messages))?.[1] ?? '';
        return { toolCalls: [{ name: 'read_file', arguments: { path, pages: '2' } }] };
      },
      { text: 'Page two is the summary.' },
    );
    const content = makePdf([['Cover page'], ['Summary: all good']]);
    run.api.userSays({
      chatId: OWNER.id,
      from: OWNER,
      document: { content, name: 'report.pdf', mime: 'application/pdf' },
    });
    await eventually(() => expect(shown(run, OWNER.id)).toEqual(['Page two is the summary.']));
    // Not pasted into the prompt: the model gets the path and a note, then reads on demand.
    const first = lastUserText(run, 0);
    expect(first).toMatch(/\[file: [^\]]+report\.pdf\] \(PDF document, not included here: read_file reads its text/);
    expect(first).not.toContain('Cover page');
    const toolResult = JSON.stringify((run.llm.requests[1]?.body.messages as unknown[] | undefined)?.at(-1));
    expect(toolResult).toContain('--- Page 2 ---\\nSummary: all good');
    expect(toolResult).not.toContain('Cover page');
  });

  it('sends a file from the message tool as a document', async () => {
    const run = await start();
    writeFileSync(join(run.workspace, 'report.txt'), 'quarterly numbers');
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'Here is the report.', media: ['report.txt'] } }] },
      { text: 'Sent it.' },
    );
    run.api.userSays({ chatId: OWNER.id, from: OWNER, text: 'send me the report' });
    await eventually(() => expect(shown(run, OWNER.id)).toEqual(['Here is the report.', 'Sent it.']));
    const upload = run.api.callsOf('sendDocument')[0];
    expect(upload?.params.chat_id).toBe(OWNER.id);
    expect(Object.values(upload?.files ?? {})).toEqual([{ name: 'report.txt', size: 17 }]);
  });

  it('shows tool hints as code when sendToolHints is on', async () => {
    const run = await start({}, { sendToolHints: true });
    run.llm.enqueue({ toolCalls: [{ name: 'list_dir', arguments: { path: '.' } }] }, { text: 'Empty.' });
    run.api.userSays({ chatId: OWNER.id, from: OWNER, text: 'what is here?' });
    await eventually(() => expect(shown(run, OWNER.id)).toEqual(['list_dir(".")', 'Empty.']));
    expect(run.api.messagesIn(OWNER.id)[0]?.text).toBe('<code>list_dir(".")</code>');
  });

  it('reports a 409 Conflict clearly and backs off instead of retrying in a loop', async () => {
    const run = await start();
    run.api.failNext('getUpdates', {
      status: 409,
      description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
    });
    await eventually(async () => expect((await healthOf(run.gateway)).channels.telegram).toBe('reconnecting'));
    const { channelDetails } = await healthOf(run.gateway);
    expect(channelDetails.telegram?.error).toMatch(/409 Conflict: another program is already receiving updates/);
    const polls = run.api.callsOf('getUpdates').length;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(run.api.callsOf('getUpdates').length).toBe(polls);
    expect(run.api.callsOf('getMe')).toHaveLength(1);
  });
});

describe('telegram setup mistakes', () => {
  async function startWith(telegram: Record<string, unknown>) {
    const api = await startFakeBotApi();
    const llm = await startFakeLLM();
    try {
      const { configPath, home, dataDir } = await writeTelegramConfig(api, llm, telegram);
      const loaded = await loadConfig({ configPath, home, env: {} });
      const gateway = await startGateway({ loaded, port: 0, env: {}, watchConfig: false, writeStateFile: false });
      await gateway.shutdown();
      return { dataDir };
    } finally {
      await api.close();
      await llm.close();
    }
  }

  it('refuses to start without a token, naming the key', async () => {
    await expect(startWith({ token: '' })).rejects.toThrow(/channels\.telegram\.token is not set/);
  });

  it('refuses a plain-http apiBase that is not on this machine (the token travels in the URL)', async () => {
    await expect(startWith({ apiBase: 'http://bot-api.example.com' })).rejects.toThrow(/must be an https:\/\/ URL/);
  });

  it('refuses webhook mode without a public https URL and a secret', async () => {
    await expect(startWith({ mode: 'webhook', webhookUrl: 'http://x' })).rejects.toThrow(/webhookUrl/);
    await expect(startWith({ mode: 'webhook', webhookUrl: 'https://bot.example.com/tg' })).rejects.toThrow(
      /webhookSecretToken/,
    );
  });

  it('names invalid keys with their path', async () => {
    await expect(startWith({ mode: 'carrier-pigeon' })).rejects.toThrow(/channels\.telegram\.mode/);
  });
});
