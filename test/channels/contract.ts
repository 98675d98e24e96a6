import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PairingStore } from '../../src/channels/pairing.js';
import type { Gateway } from '../../src/gateway/lifecycle.js';
import { createLogger } from '../../src/util/log.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { healthOf, startChannelGateway, writeChannelConfig } from './gateway-harness.js';

export interface ContractMessage {
  /** The platform's message id; the same id twice is a redelivery. */
  id: string;
  chatId: string;
  sender: { id: string; username?: string };
  chatType: 'direct' | 'group';
  text: string;
}

export interface ContractFake {
  /** `channels.<name>` keys that point the channel at the fake; the suite adds enabled, allowFrom, groupPolicy. */
  settings: Record<string, unknown>;
  /** The platform's id for a contract user, where it differs from the contract's id (Matrix: `@name:server`). */
  senderId?(sender: ContractMessage['sender']): string;
  /** The allowFrom entry that admits a contract user, where `@username` cannot (WhatsApp has no usernames). */
  allowFromEntry?(sender: ContractMessage['sender']): string;
  userSays(message: ContractMessage): void | Promise<void>;
  /** The bot's messages in a chat as the user sees them now (edits applied), in the platform's markup, in order. */
  messagesIn(chatId: string): string[];
  /** Throws when the platform would refuse or mangle this message (markup, length). */
  assertValid(message: string): void;
  /** The text a user reads. */
  visible(message: string): string;
  /** Cuts the connection between bot and platform (new connections fail too) until `restoreConnection`. */
  dropConnection(): void | Promise<void>;
  restoreConnection(): void | Promise<void>;
  close(): Promise<void>;
}

export interface ContractAdapter {
  name: string;
  startFake(): Promise<ContractFake>;
}

const OWNER = { id: '501', username: 'owner_user' };
const STRANGER = { id: '777', username: 'stranger' };
const CHAT = '501';

interface Running {
  gateway: Gateway;
  fake: ContractFake;
  llm: FakeLLM;
  dataDir: string;
}

export function describeChannelContract(adapter: ContractAdapter): void {
  describe(`${adapter.name} channel contract`, () => {
    const open: Running[] = [];
    let nextId = 1;
    const id = () => String(10_000 + nextId++);

    afterEach(async () => {
      for (const run of open.splice(0)) {
        await run.gateway.shutdown('test end');
        await run.fake.close();
        await run.llm.close();
      }
    });

    async function start(): Promise<Running> {
      const fake = await adapter.startFake();
      const llm = await startFakeLLM();
      const owner = fake.allowFromEntry?.(OWNER) ?? `@${OWNER.username}`;
      const settings = { ...fake.settings, allowFrom: [owner], groupPolicy: 'mention' };
      const files = await writeChannelConfig(adapter.name, llm, settings);
      const debug = process.env.CONTRACT_DEBUG ? { log: createLogger('debug') } : {};
      const gateway = await startChannelGateway(files, debug);
      const run = { gateway, fake, llm, dataDir: files.dataDir };
      open.push(run);
      await eventually(async () => expect(await channelState(gateway, adapter.name)).toBe('running'));
      return run;
    }

    const say = (run: Running, text: string, extra: Partial<ContractMessage> = {}): ContractMessage => {
      const message: ContractMessage = { id: id(), chatId: CHAT, sender: OWNER, chatType: 'direct', text, ...extra };
      void run.fake.userSays(message);
      return message;
    };
    const shown = (run: Running, chatId = CHAT) => run.fake.messagesIn(chatId).map((m) => run.fake.visible(m));

    it('delivers an allowed user’s message to the agent and the reply to the chat; /health shows the channel', async () => {
      const run = await start();
      run.llm.enqueue({ text: 'Hello **there**, nice to meet you.' });
      say(run, 'hi, agent');
      await eventually(() => expect(shown(run)).toEqual(['Hello there, nice to meet you.']));
      expect(JSON.stringify(run.llm.requests[0]?.body.messages)).toContain('hi, agent');
      for (const message of run.fake.messagesIn(CHAT)) run.fake.assertValid(message);
    });

    it('gives a stranger no agent turn: a pairing code in a direct chat, silence in a group', async () => {
      const run = await start();
      say(run, 'let me in', { sender: STRANGER, chatId: STRANGER.id });
      await eventually(() => expect(shown(run, STRANGER.id).join('\n')).toMatch(/pairing code/i));
      say(run, `@bot hello everyone`, { sender: STRANGER, chatId: '-900', chatType: 'group' });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(run.llm.requests).toHaveLength(0);
      expect(shown(run, '-900')).toEqual([]);

      // Approving the code (here the CLI's way) lets the stranger through on their next message.
      const pairing = new PairingStore({ dir: join(run.dataDir, 'pairing') });
      const [pending] = pairing.listPending();
      const senderId = run.fake.senderId?.(STRANGER) ?? STRANGER.id;
      expect(pending).toMatchObject({ channel: adapter.name, senderId });
      await pairing.approve(pending?.code ?? '');
      run.llm.enqueue({ text: 'Welcome aboard.' });
      say(run, 'and now?', { sender: STRANGER, chatId: STRANGER.id });
      await eventually(() => expect(shown(run, STRANGER.id)).toContain('Welcome aboard.'));
    });

    it('splits a 10,000-character reply into valid parts under the limit, code blocks closed and reopened', async () => {
      const run = await start();
      const reply = longReply();
      expect(reply.length).toBeGreaterThanOrEqual(10_000);
      run.llm.enqueue({ text: reply });
      say(run, 'write a lot');
      await eventually(() => expect(shown(run).join('\n')).toContain('END OF REPLY'), 10_000);
      await settled(run);
      const messages = run.fake.messagesIn(CHAT);
      expect(messages.length).toBeGreaterThanOrEqual(3);
      for (const message of messages) run.fake.assertValid(message);
      const text = shown(run).join('\n');
      for (let i = 0; i < 40; i++) expect(text).toContain(`Paragraph ${i} `);
      for (let i = 0; i < 120; i++) expect(text).toContain(`console.log('line ${i}');`);
      const order = [...text.matchAll(/Paragraph (\d+) /g)].map((m) => Number(m[1]));
      expect(order).toEqual([...order].sort((a, b) => a - b));
    });

    it('re-establishes a dropped connection and loses nothing sent meanwhile', async () => {
      const run = await start();
      run.llm.enqueue({ text: 'first answer' });
      say(run, 'first');
      await eventually(() => expect(shown(run)).toContain('first answer'));

      await run.fake.dropConnection();
      await eventually(async () => expect(await channelState(run.gateway, adapter.name)).not.toBe('running'));
      run.llm.enqueue({ text: 'second answer' });
      say(run, 'second, written while the bot was offline');
      run.gateway.bus.publishOutbound({ channel: adapter.name, chatId: CHAT, content: 'sent while offline' });
      await new Promise((resolve) => setTimeout(resolve, 200));
      await run.fake.restoreConnection();

      await eventually(
        () => expect(shown(run)).toEqual(expect.arrayContaining(['sent while offline', 'second answer'])),
        10_000,
      );
      expect(await channelState(run.gateway, adapter.name)).toBe('running');
    });

    it('answers a redelivered message (same id) once', async () => {
      const run = await start();
      run.llm.enqueue({ text: 'only once' }, { text: 'twice?!' });
      const message = say(run, 'hello');
      await run.fake.userSays(message);
      await eventually(() => expect(shown(run)).toEqual(['only once']));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(run.llm.requests).toHaveLength(1);
      expect(shown(run)).toEqual(['only once']);
    });
  });
}

async function channelState(gateway: Gateway, name: string): Promise<string | undefined> {
  return (await healthOf(gateway)).channels[name];
}

/** Waits until no turn runs and the chat stopped changing (streamed edits finished). */
async function settled(run: Running): Promise<void> {
  await eventually(() => expect(run.gateway.dispatcher.stats().inflight).toBe(0));
  await new Promise((resolve) => setTimeout(resolve, 300));
}

export async function eventually(check: () => void | Promise<void>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

/** ~11,000 characters of Markdown: numbered paragraphs, a list, and a 120-line code block that cannot fit one part. */
export function longReply(): string {
  const paragraphs = Array.from(
    { length: 40 },
    (_, i) =>
      `Paragraph ${i} has **bold words**, \`inline code\` and a [link](https://example.com/${i}). ` +
      'Lorem ipsum dolor sit amet. '.repeat(5),
  );
  const code = ['```js', ...Array.from({ length: 120 }, (_, i) => `console.log('line ${i}');`), '```'].join('\n');
  return [...paragraphs.slice(0, 20), code, '- one\n- two\n- three', ...paragraphs.slice(20), 'END OF REPLY'].join(
    '\n\n',
  );
}
