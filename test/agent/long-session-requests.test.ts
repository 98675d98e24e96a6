import { describe, expect, it } from 'vitest';
import { isWellPaired, MISSING_TOOL_RESULT, prepareForModel } from '../../src/agent/governor.js';
import type { ChatMessage, ChatRequest } from '../../src/providers/types.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { newSession } from '../../src/session/types.js';
import { makeLoop } from '../helpers/echo-loop.js';
import { call, FakeProvider } from '../helpers/fake-provider.js';

const KEY = 'cli:direct';

function storedHistory(turns: number): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (let t = 0; t < turns; t++) {
    const id = `old_${t}`;
    messages.push(
      { role: 'user', content: `question ${t}`, timestamp: '2026-01-01T00:00:00.000Z' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'echo', arguments: '{"text":"x"}' } }],
      },
      { role: 'tool', tool_call_id: id, name: 'echo', content: `echoed ${t}` },
      { role: 'assistant', content: `answer ${t}` },
    );
  }
  return messages;
}

describe('requests in a long session', () => {
  it('keep their prefix, stay exactly right, and repair damage that appears late', async () => {
    // The requests as the provider received them (not copies), to compare objects.
    const seen: ChatRequest[] = [];
    const reply = (response: { content?: string; toolCalls?: ReturnType<typeof call>[] }) => (request: ChatRequest) => {
      seen.push(request);
      return response;
    };
    const provider = new FakeProvider([
      reply({ toolCalls: [call('echo', { text: 'ping' })] }),
      reply({ content: 'first' }),
      reply({ content: 'second' }),
      reply({ content: 'third' }),
    ]);
    const { loop, sessions } = await makeLoop(provider);
    const seeded = newSession(KEY);
    seeded.messages.push(...storedHistory(100));
    await sessions.save(seeded);
    const turn = (content: string) => loop.processMessage({ channel: 'cli', chatId: 'direct', content });

    await turn('one');
    await turn('two');
    const [toolRound, first, second] = seen.map((request) => request.messages);
    if (!toolRound || !first || !second) throw new Error('missing requests');
    // The stored history is sent as the very objects of the request before (the governor's work was reused), and
    // each request starts with the whole previous one, byte for byte.
    for (let i = 1; i <= 400; i++) expect(second[i]).toBe(toolRound[i]);
    expect(JSON.stringify(second.slice(0, first.length))).toBe(JSON.stringify(first));
    expect(JSON.stringify(first.slice(0, toolRound.length))).toBe(JSON.stringify(toolRound));
    expect(second).toHaveLength(1 + 400 + 4 + 1);

    // Another writer leaves a tool call without its result (a crash of an older version) and a stray result.
    const other = new JsonlSessionStore(sessions.dir);
    const damaged = await other.load(KEY);
    damaged.messages.push(
      { role: 'user', content: 'crashed turn' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'lost', type: 'function', function: { name: 'echo', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'nobody', name: 'echo', content: 'stray' },
    );
    await other.save(damaged);
    await turn('three');

    const third = seen[3]?.messages ?? [];
    const lost = third.findIndex((m) => m.tool_calls?.[0]?.id === 'lost');
    expect(third[lost + 1]).toMatchObject({ role: 'tool', tool_call_id: 'lost', content: MISSING_TOOL_RESULT });
    expect(third.some((m) => m.content === 'stray')).toBe(false);
    expect(isWellPaired(third)).toBe(true);
    expect(third.some((m) => 'timestamp' in m)).toBe(false);
    for (let i = 1; i <= 400; i++) expect(third[i]).toBe(second[i]);
    expect(JSON.stringify(third.slice(0, second.length))).toBe(JSON.stringify(second));

    // And each request is what the governor gives for the same messages from scratch.
    const stored = (await new JsonlSessionStore(sessions.dir).load(KEY)).messages;
    const input = [third[0] as ChatMessage, ...stored.slice(0, -2), third.at(-1) as ChatMessage];
    expect(third).toEqual(prepareForModel(structuredClone(input)).messages);
  });
});
