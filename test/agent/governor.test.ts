import { describe, expect, it } from 'vitest';
import {
  clearedToolResult,
  estimateTokensByChars,
  findLegalStart,
  type GovernorOptions,
  isLegalStart,
  isWellPaired,
  MISSING_TOOL_RESULT,
  prepareForModel,
  repairToolPairing,
} from '../../src/agent/governor.js';
import type { ChatMessage, ToolCall } from '../../src/providers/types.js';

const system: ChatMessage = { role: 'system', content: 'sys' };
const user = (content: string): ChatMessage => ({ role: 'user', content });
const text = (content: string): ChatMessage => ({ role: 'assistant', content });
const call = (id: string, name = 'read_file', args = '{"path":"a"}'): ToolCall => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});
const calls = (...toolCalls: ToolCall[]): ChatMessage => ({ role: 'assistant', content: null, tool_calls: toolCalls });
const result = (id: string, content = `result ${id}`, name = 'read_file'): ChatMessage => ({
  role: 'tool',
  tool_call_id: id,
  name,
  content,
});

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Runs the governor on a frozen input (any mutation throws) and checks the input is still what it was. */
function govern(messages: ChatMessage[], options: GovernorOptions = {}) {
  const snapshot = structuredClone(messages);
  const governed = prepareForModel(deepFreeze(messages), options);
  expect(messages).toEqual(snapshot);
  return governed;
}

function expectLegal(messages: ChatMessage[]) {
  expect(isWellPaired(messages)).toBe(true);
  const start = messages.findIndex((message) => message.role !== 'system');
  expect(messages[start]?.role).toBe('user');
  expect(isLegalStart(messages, start)).toBe(true);
}

const roles = (messages: ChatMessage[]) => messages.map((m) => (m.role === 'tool' ? `tool:${m.tool_call_id}` : m.role));

describe('pairing repair', () => {
  it('backfills a missing result right after its call', () => {
    const { messages, report } = govern([system, user('go'), calls(call('a'), call('b')), result('a'), text('done')]);
    expect(roles(messages)).toEqual(['system', 'user', 'assistant', 'tool:a', 'tool:b', 'assistant']);
    expect(messages[4]).toMatchObject({ tool_call_id: 'b', name: 'read_file', content: MISSING_TOOL_RESULT });
    expect(report.backfilledResults).toBe(1);
    expectLegal(messages);
  });

  it('backfills calls interrupted at the end of the history', () => {
    const { messages } = govern([user('go'), calls(call('a'))]);
    expect(roles(messages)).toEqual(['user', 'assistant', 'tool:a']);
  });

  it('drops orphan results', () => {
    const { messages, report } = govern([system, result('x'), user('hi'), text('hello'), result('y'), user('again')]);
    expect(roles(messages)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(report.droppedOrphanResults).toBe(2);
  });

  it('removes malformed calls together with their results', () => {
    const { messages, report } = govern([
      user('go'),
      calls(
        call('good'),
        call('', 'read_file'),
        call('noname', ' '),
        call('badjson', 'exec', '{"cmd":'),
        call('array', 'exec', '[1]'),
        call('good', 'exec'),
      ),
      result('good'),
      result('noname'),
      result('badjson'),
      result('array'),
      text('done'),
    ]);
    expect(roles(messages)).toEqual(['user', 'assistant', 'tool:good', 'assistant']);
    expect(messages[1]?.tool_calls?.map((c) => c.id)).toEqual(['good']);
    expect(report.droppedMalformedCalls).toBe(5);
    expect(report.droppedOrphanResults).toBe(3);
  });

  it('accepts empty arguments, as the runner does', () => {
    const { messages } = govern([user('go'), calls(call('a', 'list_dir', '')), result('a', 'x', 'list_dir')]);
    expect(messages[1]?.tool_calls).toHaveLength(1);
  });

  it('drops an assistant message left with no content and no calls', () => {
    const { messages, report } = govern([
      user('go'),
      calls(call('', 'exec')),
      result(''),
      { role: 'assistant', content: '  ' },
      { role: 'assistant', content: [] },
      text('answer'),
    ]);
    expect(roles(messages)).toEqual(['user', 'assistant']);
    expect(messages[1]).not.toHaveProperty('tool_calls');
    expect(report.droppedEmptyAssistants).toBe(3);
  });

  it('keeps an assistant with text whose calls were all malformed, without a tool_calls key', () => {
    const { messages } = govern([
      user('go'),
      { role: 'assistant', content: 'let me look', tool_calls: [call('x', '')] },
    ]);
    expect(messages[1]).toEqual({ role: 'assistant', content: 'let me look' });
  });

  it('keeps the first of duplicated results', () => {
    const { messages, report } = govern([user('go'), calls(call('a')), result('a', 'first'), result('a', 'second')]);
    expect(messages.map((m) => m.content)).toEqual(['go', null, 'first']);
    expect(report.droppedDuplicateResults).toBe(1);
  });

  it('moves a late result up next to its call when no other assistant message came between', () => {
    const { messages, report } = govern([
      user('go'),
      calls(call('a'), call('b')),
      result('a'),
      user('hey'),
      result('b'),
    ]);
    expect(roles(messages)).toEqual(['user', 'assistant', 'tool:a', 'tool:b', 'user']);
    expect(messages[3]?.content).toBe('result b');
    expect(report.movedResults).toBe(1);
  });

  it('treats a result separated by another assistant message as an orphan', () => {
    const { messages, report } = govern([user('go'), calls(call('a')), user('hey'), text('hi'), result('a')]);
    expect(roles(messages)).toEqual(['user', 'assistant', 'tool:a', 'user', 'assistant']);
    expect(messages[2]?.content).toBe(MISSING_TOOL_RESULT);
    expect(report).toMatchObject({ droppedOrphanResults: 1, backfilledResults: 1 });
  });

  it('puts results in call order', () => {
    const { messages } = govern([user('go'), calls(call('a'), call('b')), result('b'), result('a')]);
    expect(roles(messages)).toEqual(['user', 'assistant', 'tool:a', 'tool:b']);
  });

  it('returns copies, never the stored message objects', () => {
    const input = [user('go'), calls(call('a')), result('a')];
    const { messages } = repairToolPairing(input);
    messages.forEach((message, i) => {
      expect(message).not.toBe(input[i]);
    });
  });
});

describe('reasoning fields', () => {
  it("keeps reasoning_content '' and signed thinking blocks exactly as stored", () => {
    const signature = 'EqQBCkgIARABGAIiQL+/x9==\u00e9\n  ';
    const thinking = { type: 'thinking' as const, thinking: 'hmm…', signature };
    const redacted = { type: 'redacted_thinking' as const, data: 'opaque==' };
    const input: ChatMessage[] = [
      user('go'),
      { ...calls(call('a')), reasoning_content: '' },
      result('a', 'x'.repeat(5_000)),
      { role: 'assistant', content: 'done', reasoning_content: '', thinking_blocks: [thinking, redacted] },
    ];
    const { messages } = govern(input, { maxToolResultChars: 100, budgetTokens: 10 });
    expect(messages[1]).toHaveProperty('reasoning_content', '');
    expect(messages[3]).toHaveProperty('reasoning_content', '');
    expect(messages[3]?.thinking_blocks).toEqual([thinking, redacted]);
    const replayed = messages[3]?.thinking_blocks?.[0];
    expect(replayed?.type === 'thinking' && replayed.signature).toBe(signature);
  });
});

describe('tool-result budget', () => {
  it('cuts an oversized result to head and tail on the copy only', () => {
    const long = `${'A'.repeat(10_000)}${'Z'.repeat(10_000)}`;
    const input = [user('go'), calls(call('a')), result('a', long)];
    const { messages, report } = govern(input, { maxToolResultChars: 1_000 });
    const content = messages[2]?.content;
    expect(typeof content).toBe('string');
    expect((content as string).length).toBeLessThan(1_200);
    expect(content).toMatch(/^A{700}\n\n\[… 19000 characters cut/);
    expect(content).toMatch(/\n\nZ{300}$/);
    expect(input[2]?.content).toBe(long);
    expect(report.truncatedResults).toBe(1);
  });

  it('cuts the text parts of a multi-part result over the limit and keeps its image parts', () => {
    const image = { type: 'image_url' as const, image_url: { url: 'data:image/png;base64,AAAA' } };
    const big = `${'A'.repeat(10_000)}${'Z'.repeat(10_000)}`;
    const input = [
      user('go'),
      calls(call('a')),
      { ...result('a'), content: [{ type: 'text' as const, text: big }, image] },
    ];
    const { messages, report } = govern(input, { maxToolResultChars: 1_000 });
    const content = messages[2]?.content;
    if (!Array.isArray(content)) throw new Error('a multi-part result stays multi-part');
    expect(content[1]).toEqual(image);
    const part = content[0];
    expect(part?.type === 'text' && part.text).toMatch(/^A{700}\n\n\[… 19000 characters cut[\s\S]*\n\nZ{300}$/);
    expect(report.truncatedResults).toBe(1);
  });

  it('cuts a multi-part result whose parts each fit but together are over the limit', () => {
    const parts = ['a', 'b', 'c', 'd'].map((letter) => ({ type: 'text' as const, text: letter.repeat(600) }));
    const small = { type: 'text' as const, text: 'exit code 0' };
    const input = [user('go'), calls(call('a')), { ...result('a'), content: [...parts, small] }];
    const { messages, report } = govern(input, { maxToolResultChars: 1_000 });
    const content = messages[2]?.content;
    if (!Array.isArray(content)) throw new Error('a multi-part result stays multi-part');
    const texts = content.map((p) => (p.type === 'text' ? p.text : ''));
    // Each of the four large parts keeps its head and tail; the short part is kept whole.
    for (const [i, letter] of ['a', 'b', 'c', 'd'].entries()) {
      expect(texts[i]).toMatch(new RegExp(`^${letter}+\\n\\n\\[… \\d+ characters cut[\\s\\S]*\\n\\n${letter}+$`));
    }
    expect(texts[4]).toBe('exit code 0');
    const kept = texts
      .join('')
      .replace(/\n\n\[… \d+ characters cut from the middle of this result to fit the context …\]\n\n/g, '');
    expect(kept.length).toBeLessThanOrEqual(1_000);
    expect(report.truncatedResults).toBe(1);
  });

  it('never splits a surrogate pair', () => {
    const { messages } = govern([user('go'), calls(call('a')), result('a', '😀'.repeat(100))], {
      maxToolResultChars: 11,
    });
    expect(messages[2]?.content).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });
});

/** 15 read_file rounds with 2,000-char results; tokens counted as content characters for easy arithmetic. */
function toolHeavyHistory(name = 'read_file'): ChatMessage[] {
  const messages: ChatMessage[] = [system, user('go')];
  for (let i = 0; i < 15; i++)
    messages.push(calls(call(`c${i}`, name)), result(`c${i}`, String(i % 10).repeat(2_000), name));
  messages.push(text('done'));
  return messages;
}
const charTokens = (messages: readonly ChatMessage[]) =>
  messages.reduce((sum, m) => sum + (typeof m.content === 'string' ? m.content.length : 0), 0);

describe('microcompact', () => {
  it('clears the oldest compactable results first and stops once under budget', () => {
    const full = charTokens(toolHeavyHistory());
    const budget = full - 2 * 2_000; // clearing two results is not quite enough, three is
    const { messages, report } = govern(toolHeavyHistory(), { budgetTokens: budget, estimateTokens: charTokens });
    const results = messages.filter((m) => m.role === 'tool');
    expect(results.slice(0, 3).map((m) => m.content)).toEqual([0, 1, 2].map(() => clearedToolResult('read_file')));
    expect(results.slice(3).every((m) => (m.content as string).length === 2_000)).toBe(true);
    expect(report).toMatchObject({ compactedResults: 3, snippedMessages: 0, overBudget: false });
    expect(report.estimatedTokens).toBeLessThanOrEqual(budget);
  });

  it('always keeps the last 10 tool results intact', () => {
    const { messages, report } = govern(toolHeavyHistory(), { budgetTokens: 1, estimateTokens: charTokens });
    const results = messages.filter((m) => m.role === 'tool');
    expect(report.compactedResults).toBe(5);
    expect(results.slice(5).every((m) => (m.content as string).length === 2_000)).toBe(true);
    // Only one user message: nothing can be snipped, so the request stays over budget and says so.
    expect(report).toMatchObject({ snippedMessages: 0, overBudget: true });
  });

  it('leaves results of other tools alone', () => {
    const { report } = govern(toolHeavyHistory('write_file'), { budgetTokens: 1, estimateTokens: charTokens });
    expect(report.compactedResults).toBe(0);
  });

  it('finds the tool name on the call when the result lacks it', () => {
    const input = toolHeavyHistory().map((m) => (m.role === 'tool' ? { ...m, name: undefined } : m));
    const { report } = govern(input, { budgetTokens: 1, estimateTokens: charTokens });
    expect(report.compactedResults).toBe(5);
  });
});

/** `turns` rounds of user → exec call → result → answer, each message about 1,000 characters. */
function conversation(turns: number): ChatMessage[] {
  const messages: ChatMessage[] = [system];
  for (let t = 0; t < turns; t++) {
    messages.push(user(`q${t} ${'u'.repeat(1_000)}`), calls(call(`t${t}`, 'message')));
    messages.push(result(`t${t}`, 'r'.repeat(1_000), 'message'), text(`a${t} ${'a'.repeat(1_000)}`));
  }
  return messages;
}

describe('snip', () => {
  it('drops the oldest turns to a legal start, stopping once under budget', () => {
    const budget = 10_000;
    const input = conversation(30);
    const { messages, report } = govern(input, { budgetTokens: budget });
    expect(messages[0]?.content).toBe('sys');
    expectLegal(messages);
    expect(report.snippedMessages).toBeGreaterThan(0);
    expect(messages).toHaveLength(input.length - report.snippedMessages);
    expect(report.estimatedTokens).toBeLessThanOrEqual(budget);
    // Keeping one more turn would not have fit.
    const previousTurn = input.slice(1 + report.snippedMessages - 4, 1 + report.snippedMessages);
    expect(report.estimatedTokens + estimateTokensByChars(previousTurn)).toBeGreaterThan(budget);
    expect(messages.at(-1)).toEqual(input.at(-1));
  });

  it('never drops the last user turn, even when it alone is over budget', () => {
    const input = [...conversation(5), user('last'), calls(call('z', 'message')), result('z', 'x'.repeat(50_000))];
    const { messages, report } = govern(input, { budgetTokens: 100, maxToolResultChars: 100_000 });
    expect(roles(messages)).toEqual(['system', 'user', 'assistant', 'tool:z']);
    expect(messages[1]?.content).toBe('last');
    expect(report).toMatchObject({ snippedMessages: 20, overBudget: true });
  });

  it('snips a broken history to a legal one', () => {
    const input = conversation(10);
    input.splice(7, 1); // a lost result
    input.splice(14, 0, result('ghost'), user('interjection')); // an orphan, and a user message inside a tool round
    const { messages } = govern(input, { budgetTokens: 3_000 });
    expectLegal(messages);
  });
});

describe('legal start helpers', () => {
  const history = [system, user('a'), calls(call('x')), user('mid'), result('x'), text('ok'), user('b'), text('fine')];

  it('isLegalStart needs a user message and no result whose call lies before it', () => {
    expect(isLegalStart(history, 1)).toBe(true);
    expect(isLegalStart(history, 3)).toBe(false);
    expect(isLegalStart(history, 5)).toBe(false);
    expect(isLegalStart(history, 6)).toBe(true);
  });

  it('findLegalStart finds the first legal index at or after `from`', () => {
    expect(findLegalStart(history)).toBe(1);
    expect(findLegalStart(history, 2)).toBe(6);
    expect(findLegalStart(history, 7)).toBe(-1);
  });
});

describe('long histories', () => {
  it('governs a 10,000-message history with assorted damage into a legal request', () => {
    const input: ChatMessage[] = [system];
    for (let t = 0; input.length < 10_000; t++) {
      input.push(user(`question ${t}`));
      const id = `call${t}`;
      if (t % 7 === 3) input.push(result(`orphan${t}`));
      input.push(calls(call(id, t % 2 ? 'exec' : 'read_file'), call(`${id}b`, 'grep', 'oops')));
      if (t % 11 !== 5) input.push(result(id, 'x'.repeat(600 + (t % 13) * 50)));
      input.push(result(`${id}b`));
      input.push({ role: 'assistant', content: `answer ${t}`, reasoning_content: t % 5 ? 'thought' : '' });
    }
    const budget = 20_000;
    const { messages, report } = govern(input, { budgetTokens: budget });
    expectLegal(messages);
    expect(report.droppedMalformedCalls * report.backfilledResults * report.droppedOrphanResults).toBeGreaterThan(0);
    expect(report.compactedResults).toBeGreaterThan(0);
    expect(report.snippedMessages).toBeGreaterThan(0);
    expect(report.estimatedTokens).toBeLessThanOrEqual(budget);
    expect(messages.at(-1)).toEqual(input.at(-1));
  });
});
