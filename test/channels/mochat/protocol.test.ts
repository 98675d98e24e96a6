/** MoChat's event rules as upstream applies them (pure functions), and the credentials check against the fake. */
import { afterEach, describe, expect, it } from 'vitest';
import {
  bufferedBody,
  contentText,
  mentionIds,
  parseWatchPayload,
  requiresMention,
  resolveTarget,
  wasMentioned,
  withoutMention,
} from '../../../src/channels/mochat/events.js';
import { mochatChannel, mochatSettingsSchema } from '../../../src/channels/mochat/index.js';
import { CLAW_TOKEN, type FakeMochat, startFakeMochat } from './fake-mochat.js';

const settings = (block: Record<string, unknown> = {}) => mochatSettingsSchema.parse({ clawToken: 't', ...block });

describe('mochat events', () => {
  it('resolves chat ids: session_ ids are sessions, anything else a panel; prefixes are accepted', () => {
    expect(resolveTarget('session_abc')).toEqual({ id: 'session_abc', isPanel: false });
    expect(resolveTarget('65f0c0ffee')).toEqual({ id: '65f0c0ffee', isPanel: true });
    expect(resolveTarget('mochat:session_abc')).toEqual({ id: 'session_abc', isPanel: false });
    expect(resolveTarget('Panel: p1')).toEqual({ id: 'p1', isPanel: true });
    expect(resolveTarget('group:session_abc')).toEqual({ id: 'session_abc', isPanel: false });
    expect(resolveTarget('  ')).toEqual({ id: '', isPanel: false });
    expect(resolveTarget('channel:')).toEqual({ id: '', isPanel: false });
  });

  it('finds mentions in meta flags, meta id lists and the text', () => {
    expect(wasMentioned({ meta: { mentioned: true } }, '')).toBe(true);
    expect(wasMentioned({ meta: { wasMentioned: true } }, 'a')).toBe(true);
    expect(wasMentioned({ meta: { mentions: [{ userId: 'a' }] } }, 'a')).toBe(true);
    expect(wasMentioned({ meta: { mentionedUserIds: ['b'] } }, 'a')).toBe(false);
    expect(wasMentioned({ content: 'hi <@a>' }, 'a')).toBe(true);
    expect(wasMentioned({ content: 'hi @a' }, 'a')).toBe(true);
    expect(wasMentioned({ content: 'hi @a' }, '')).toBe(false);
    expect(mentionIds(['x', ' ', { id: 'y' }, { _id: 'z' }, 3, null])).toEqual(['x', 'y', 'z']);
    expect(withoutMention('<@a> hello @a there', 'a')).toBe('hello there');
  });

  it('takes the mention rule from groups[groupId], then groups[panelId], groups["*"], then mention.requireInGroups', () => {
    const rules = settings({
      mention: { requireInGroups: true },
      groups: { g1: { requireMention: false }, p2: { requireMention: true }, '*': { requireMention: false } },
    });
    expect(requiresMention(rules, 'p2', 'g1')).toBe(false);
    expect(requiresMention(rules, 'p2', 'g9')).toBe(true);
    expect(requiresMention(rules, 'p3', 'g9')).toBe(false);
    expect(requiresMention(settings({ mention: { requireInGroups: true } }), 'p', 'g')).toBe(true);
    expect(requiresMention(settings(), 'p', 'g')).toBe(false);
  });

  it('joins held messages as "name: text" lines in groups; content that is not text becomes JSON', () => {
    const entry = (body: string, senderName: string) => ({
      body,
      author: 'u',
      senderName,
      senderUsername: '',
      messageId: '',
      groupId: 'g',
    });
    expect(bufferedBody([entry('one', 'Ann')], true)).toBe('one');
    expect(bufferedBody([entry('one', 'Ann'), entry('two', '')], true)).toBe('Ann: one\nu: two');
    expect(bufferedBody([entry('one', 'Ann'), entry('two', 'Bo')], false)).toBe('one\ntwo');
    expect(contentText({ type: 'card', text: '你好' })).toBe('{"type":"card","text":"你好"}');
    expect(contentText('  spaced ')).toBe('spaced');
  });

  it('reads watch payloads: cursor, seq and message.add events; everything else is skipped', () => {
    const parsed = parseWatchPayload({
      sessionId: 's',
      cursor: 7,
      events: [{ seq: 6, type: 'message.add', payload: { author: 'u' } }, { seq: 7, type: 'message.recall' }, 'x'],
    });
    expect(parsed?.cursor).toBe(7);
    expect(parsed?.events?.map((e) => [e.seq, e.message?.payload.author])).toEqual([
      [6, 'u'],
      [7, undefined],
    ]);
    expect(parseWatchPayload({ cursor: 1 })).toBeUndefined();
    expect(parseWatchPayload({ sessionId: 's', cursor: -1 })).toEqual({ targetId: 's' });
  });

  it('keeps upstream’s defaults', () => {
    expect(settings()).toMatchObject({
      baseUrl: 'https://mochat.io',
      socketPath: '/socket.io',
      socketDisableMsgpack: false,
      socketReconnectDelayMs: 1000,
      socketMaxReconnectDelayMs: 10000,
      socketConnectTimeoutMs: 10000,
      refreshIntervalMs: 30000,
      watchTimeoutMs: 25000,
      watchLimit: 100,
      retryDelayMs: 500,
      maxRetryAttempts: 0,
      replyDelayMode: 'non-mention',
      replyDelayMs: 120000,
      mention: { requireInGroups: false },
      groups: {},
    });
  });
});

describe('mochat verify', () => {
  let fake: FakeMochat | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it('passes with the claw token MoChat accepts and fails with one it refuses', async () => {
    fake = await startFakeMochat();
    const block = { enabled: true, baseUrl: fake.url, clawToken: CLAW_TOKEN, agentUserId: 'agent_bot_1' };
    mochatChannel.parse(block);
    await expect(mochatChannel.verify?.(block)).resolves.toMatchObject({
      status: 'pass',
      identity: { account: 'agent_bot_1' },
    });
    await expect(mochatChannel.verify?.({ ...block, clawToken: 'wrong' })).resolves.toMatchObject({ status: 'fail' });
  });
});
