/**
 * A newcomer with one provider key and no model configured: `nanobot agent -m` answers through that provider and
 * says on stderr which model it chose (stdout holds only the answer, for scripts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { runCli, tempHome } from './cli-helpers.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe('nanobot agent -m with only one provider key', () => {
  const cases = [
    { key: 'OPENAI_API_KEY', provider: 'OPENAI', upstream: 'gpt-5' },
    { key: 'GEMINI_API_KEY', provider: 'GEMINI', upstream: 'gemini-2.5-pro' },
    { key: 'DEEPSEEK_API_KEY', provider: 'DEEPSEEK', upstream: 'deepseek-chat' },
    { key: 'GROQ_API_KEY', provider: 'GROQ', upstream: 'llama-3.3-70b-versatile' },
  ];
  for (const { key, provider, upstream } of cases) {
    it(`${key}: answers through that provider and names the model on stderr`, async () => {
      fake = await startFakeLLM([{ text: 'Hello from the fake.' }]);
      const home = tempHome();
      const env = { [key]: 'sk-test-0123456789', [`NANOBOT_PROVIDERS__${provider}__API_BASE`]: `${fake.url}/v1` };
      const result = await runCli(['agent', '-m', 'hi'], home, env);
      expect(result.stderr).not.toMatch(/No API key/);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe('Hello from the fake.\n');
      expect(result.stderr).toContain('No model configured and no Anthropic key: using');
      expect(result.stderr).toContain(`$${key}`);
      expect(fake.requests[0]?.body.model).toBe(upstream);
      expect(fake.requests[0]?.headers.authorization).toBe('Bearer sk-test-0123456789');
    });
  }

  it('no key at all: one error naming the variables looked for and `nanobot onboard`', async () => {
    const result = await runCli(['agent', '-m', 'hi'], tempHome());
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /No API key found: nanobot looked for ANTHROPIC_API_KEY, OPENROUTER_API_KEY, OPENAI_API_KEY/,
    );
    expect(result.stderr).toContain('nanobot onboard');
  });
});
