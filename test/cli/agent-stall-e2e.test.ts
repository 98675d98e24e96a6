/**
 * `nanobot agent -m` (the built binary) against a model stream that stalls after its headers (issue 16 item 3): a
 * stall before any text is retried and the retry's answer printed; a stall after text ends the command with the
 * partial text on stdout and the stall, with what to set, on stderr. The idle limit is set small through the env.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, type FakeReply, startFakeLLM } from '../helpers/fake-llm.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function homeFor(script: FakeReply[]): Promise<string> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  fake = await startFakeLLM(script);
  const url = fake.url;
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${url}/v1` };
  });
  return home;
}

const ENV = { NANOBOT_STREAM_IDLE_TIMEOUT_S: '0.5' };

describe('nanobot agent -m with a stalled model stream', () => {
  it('ends with the partial text on stdout and the stall on stderr once text has streamed', async () => {
    const home = await homeFor([{ text: 'Here is the first part and then silence.', stallAfterEvents: 2 }]);
    const result = await runCli(['agent', '-m', 'hi'], home, ENV);
    expect(result.code).not.toBe(0);
    expect(result.stdout.trim().length).toBeGreaterThan(0);
    expect('Here is the first part and then silence.'.startsWith(result.stdout.trim())).toBe(true);
    expect(result.stderr).toMatch(
      /The model's stream stalled for 0\.5 s .*; set NANOBOT_STREAM_IDLE_TIMEOUT_S to wait longer\./,
    );
    expect(result.stderr).not.toMatch(/\n\s+at /); // no stack dump
    expect(fake?.requests).toHaveLength(1);
  }, 30_000);

  it('retries a stall that came before any text, and prints the retry’s answer', async () => {
    const home = await homeFor([{ text: 'never', stallAfterEvents: 1 }, { text: 'The answer after a retry.' }]);
    const result = await runCli(['agent', '-m', 'hi'], home, ENV);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('The answer after a retry.');
    expect(result.stderr).toMatch(/stream stalled for 0\.5 s .*wait longer; retrying in 1 s/);
    expect(fake?.requests).toHaveLength(2);
  }, 30_000);
});
