/** `nanobot agent -m` with a background subagent: the process waits for its report and prints the follow-up answer. */
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLLM, type FakeReply, startFakeLLM } from '../helpers/fake-llm.js';
import { editConfig, runCli, tempHome } from './cli-helpers.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const text = (body: Record<string, unknown>) => JSON.stringify(body.messages);

/** Answers by what is asked, since the parent's and the subagent's requests interleave. */
function reply(body: Record<string, unknown>): FakeReply {
  const sent = text(body);
  const tools = JSON.stringify(body.tools ?? []);
  if (!tools.includes('"spawn"')) return { text: 'The answer is 42.' }; // the subagent: no spawn tool
  if (sent.includes('The answer is 42.')) return { text: 'Your subagent says: the answer is 42.' }; // its report
  if (sent.includes('"role":"tool"')) return { text: 'I started a subagent on it.' };
  return { toolCalls: [{ name: 'spawn', arguments: { task: 'Compute the answer', label: 'answer' } }] };
}

describe('nanobot agent -m with a background subagent', () => {
  it('prints the answer, then the follow-up after the subagent reports, and exits 0', async () => {
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    fake = await startFakeLLM(Array.from({ length: 6 }, () => reply));
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'test-model';
      c.providers.custom = { apiKey: 'test-key', apiBase: `${fake?.url}/v1` };
    });
    const result = await runCli(['agent', '-m', 'Find the answer in the background'], home);
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toBe('I started a subagent on it.');
    expect(lines.at(-1)).toBe('Your subagent says: the answer is 42.');
    expect(fake.requests).toHaveLength(4);
  });
});
