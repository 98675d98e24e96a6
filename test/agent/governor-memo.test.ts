import { describe, expect, it } from 'vitest';
import {
  GovernorMemo,
  GovernorMemos,
  type GovernorOptions,
  MISSING_TOOL_RESULT,
  prepareForModel,
} from '../../src/agent/governor.js';
import type { ChatMessage, ToolCall } from '../../src/providers/types.js';

const at = '2026-01-01T00:00:00.000Z';
const system = (): ChatMessage => ({ role: 'system', content: 'sys' });
const user = (content: string): ChatMessage => ({ role: 'user', content, timestamp: at });
const text = (content: string): ChatMessage => ({ role: 'assistant', content, timestamp: at });
const call = (id: string, args = '{"path":"a"}'): ToolCall => ({
  id,
  type: 'function',
  function: { name: 'read_file', arguments: args },
});
const calls = (...toolCalls: ToolCall[]): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: toolCalls,
  timestamp: at,
});
const result = (id: string, content = `result ${id}`): ChatMessage => ({
  role: 'tool',
  tool_call_id: id,
  name: 'read_file',
  content,
  timestamp: at,
});

/** `turns` clean exchanges: question, a tool round, answer. */
function history(turns: number, prefix = 't'): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (let t = 0; t < turns; t++) {
    messages.push(user(`q ${prefix}${t}`), calls(call(`${prefix}${t}`)), result(`${prefix}${t}`), text(`a ${t}`));
  }
  return messages;
}

/** What the governor gives for the same messages with no memo and no shared objects. */
const fresh = (messages: ChatMessage[], options: GovernorOptions = {}) =>
  prepareForModel(structuredClone(messages), options);

describe('the governor memo', () => {
  it('gives exactly what a fresh run gives, request after request, as a damaged session grows', () => {
    const memo = new GovernorMemo();
    const stored = history(100);
    const damage: ChatMessage[][] = [
      [user('late'), calls(call('lost'))], // a call whose result never came
      [result('stray')], // an orphan result
      [user('again'), calls(call('x'), call('y')), result('y'), user('interjection'), result('x')], // moved result
      [text('fine'), calls(call('dup')), result('dup'), result('dup')], // a duplicate
      [calls(call('bad', '{"cut":')), result('bad'), text('')], // a malformed call and an empty answer
      history(3, 'u'),
    ];
    for (const added of damage) {
      stored.push(...added);
      for (const tail of [[], [user('now')]]) {
        const request = [system(), ...stored, ...tail];
        const options = { memo, maxToolResultChars: 12 };
        const governed = prepareForModel(request, options);
        expect(governed).toEqual(fresh(request, { maxToolResultChars: 12 }));
      }
    }
  });

  it('still repairs a pairing that breaks late in a long history', () => {
    const memo = new GovernorMemo();
    const stored = history(300);
    prepareForModel([system(), ...stored, user('first')], { memo });
    stored.push(user('first'), calls(call('late1'), call('late2')), result('late2'), user('second'));
    const { messages, report } = prepareForModel([system(), ...stored], { memo });
    const end = messages.slice(-4);
    expect(end.map((m) => m.role)).toEqual(['assistant', 'tool', 'tool', 'user']);
    expect(end[1]).toMatchObject({ tool_call_id: 'late1', content: MISSING_TOOL_RESULT });
    expect(end[2]).toMatchObject({ tool_call_id: 'late2', content: 'result late2' });
    expect(report.backfilledResults).toBe(1);
    expect(prepareForModel([system(), ...stored], { memo })).toEqual(fresh([system(), ...stored]));
  });

  it('sends the same message objects for the part a previous request already had', () => {
    const memo = new GovernorMemo();
    const stored = history(100);
    const first = prepareForModel([system(), ...stored, user('one')], { memo }).messages;
    stored.push(user('one'), text('answer one'));
    const second = prepareForModel([system(), ...stored, user('two')], { memo }).messages;
    for (let i = 1; i < first.length - 1; i++) expect(second[i]).toBe(first[i]);
    expect(second.slice(-3).map((m) => m.content)).toEqual(['one', 'answer one', 'two']);
  });

  it('keeps session timestamps from the model', () => {
    const memo = new GovernorMemo();
    const request = [system(), ...history(100), user('now')];
    for (let round = 0; round < 2; round++) {
      const { messages } = prepareForModel(request, { memo });
      expect(messages.some((m) => 'timestamp' in m)).toBe(false);
    }
  });

  it('notices a message replaced in the middle, and other settings', () => {
    const memo = new GovernorMemo();
    const stored = history(100);
    prepareForModel([system(), ...stored], { memo });
    stored[150] = text('edited answer');
    expect(prepareForModel([system(), ...stored], { memo })).toEqual(fresh([system(), ...stored]));
    const small = { memo, maxToolResultChars: 5 };
    expect(prepareForModel([system(), ...stored], small)).toEqual(
      fresh([system(), ...stored], { maxToolResultChars: 5 }),
    );
  });

  it('trims to the budget on the request only, leaving the remembered messages whole', () => {
    const memo = new GovernorMemo();
    const stored = history(100);
    const budget = { memo, budgetTokens: 2_000 };
    const trimmed = prepareForModel([system(), ...stored, user('now')], budget);
    expect(trimmed.report.snippedMessages).toBeGreaterThan(0);
    expect(trimmed).toEqual(fresh([system(), ...stored, user('now')], { budgetTokens: 2_000 }));
    const whole = prepareForModel([system(), ...stored, user('now')], { memo });
    expect(whole.messages).toHaveLength(stored.length + 2);
    expect(whole).toEqual(fresh([system(), ...stored, user('now')]));
  });
});

describe('GovernorMemos', () => {
  it('finds a long conversation by its first message, and gives short ones a memo of their own', () => {
    const memos = new GovernorMemos();
    const stored = history(60);
    const memo = memos.for([system(), ...stored]);
    expect(memos.for([system(), ...stored, user('next')])).toBe(memo);
    expect(memos.for([system(), ...history(60)])).not.toBe(memo);
    const short = [system(), user('hi')];
    expect(memos.for(short)).not.toBe(memos.for(short));
  });

  it('empties the least recently used memos beyond its bounds, which still give the right result', () => {
    const memos = new GovernorMemos();
    const conversations = Array.from({ length: 20 }, () => [system(), ...history(60)]);
    const used = conversations.map((conversation) => {
      const memo = memos.for(conversation);
      prepareForModel(conversation, { memo });
      return memo;
    });
    expect(used[0]?.size).toBe(0);
    expect(used[19]?.size).toBe(241);
    const first = conversations[0] ?? [];
    expect(memos.for(first)).toBe(used[0]);
    expect(prepareForModel(first, { memo: memos.for(first) })).toEqual(fresh(first));
  });
});
