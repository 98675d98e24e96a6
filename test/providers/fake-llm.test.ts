import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLLM, SCRIPT_EXHAUSTED_TEXT, startFakeLLM } from '../helpers/fake-llm.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe('the fake LLM server', () => {
  it('answers non-streaming requests, scripted functions and an exhausted script', async () => {
    fake = await startFakeLLM([
      { toolCalls: [{ name: 'exec', arguments: { command: 'ls' }, id: 'call_1' }] },
      (body) => ({ text: `you said ${String((body.messages as { content: string }[])[0]?.content)}` }),
    ]);
    const client = new OpenAI({ apiKey: 'k', baseURL: `${fake.url}/v1`, maxRetries: 0 });
    const ask = (content: string) =>
      client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content }] });

    const first = await ask('run ls');
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    expect(first.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      id: 'call_1',
      function: { name: 'exec', arguments: '{"command":"ls"}' },
    });
    expect((await ask('hello')).choices[0]?.message.content).toBe('you said hello');
    expect((await ask('again')).choices[0]?.message.content).toBe(SCRIPT_EXHAUSTED_TEXT);
    expect(fake.requests.map((r) => r.body.messages)).toHaveLength(3);
    expect(fake.remaining()).toBe(0);
  });

  it('sends scripted HTTP errors with their headers, and 404 for unknown routes', async () => {
    fake = await startFakeLLM([{ status: 429, headers: { 'retry-after': '0' } }]);
    const limited = await fetch(`${fake.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('0');
    expect(await limited.json()).toMatchObject({ error: { type: 'rate_limit_error' } });
    expect((await fetch(`${fake.url}/nope`, { method: 'POST', body: '{}' })).status).toBe(404);
  });
});
