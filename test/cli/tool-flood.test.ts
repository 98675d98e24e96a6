/**
 * Issue 16 item 5 on the built CLI: one model response with 1,200 tool calls. The turn completes; the calls past
 * `tools.maxCallsPerResponse` (default 100) are not run and get an error result the model reads; every call run has
 * its result in the session, and each is stored once.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { editConfig, runCli, tempHome } from './cli-helpers.js';

const CALLS = 1200;
const capNote = (max: number) =>
  `Not run: at most ${max} tool calls per response (tools.maxCallsPerResponse); call the rest in the next step.`;

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function sessionMessages(home: string): Record<string, unknown>[] {
  const root = join(home, '.nanobot', 'sessions');
  const [workspaceId] = readdirSync(root);
  const file = join(root, workspaceId ?? '', `${Buffer.from('cli:direct').toString('base64url')}.jsonl`);
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line._type === undefined);
}

async function floodHome(config?: (c: Record<string, unknown>) => void): Promise<string> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  writeFileSync(join(home, '.nanobot', 'workspace', 'notes.txt'), 'buy milk\n');
  fake = await startFakeLLM([
    {
      toolCalls: Array.from({ length: CALLS }, (_, i) => ({
        id: `call_${i}`,
        name: 'read_file',
        arguments: { path: 'notes.txt' },
      })),
    },
    { text: 'Read them all.' },
  ]);
  const url = fake.url;
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'test-key', apiBase: `${url}/v1` };
    config?.(c);
  });
  return home;
}

describe(`nanobot agent -m with ${CALLS} tool calls in one response`, () => {
  it.each([
    { label: 'the default cap (100)', max: 100, config: undefined },
    {
      label: 'tools.maxCallsPerResponse = 1000',
      max: 1000,
      config: (c: Record<string, unknown>) => {
        (c.tools as Record<string, unknown>).maxCallsPerResponse = 1000;
      },
    },
  ])(
    'runs the calls up to $label, answers the rest with an error, and completes',
    async ({ max, config }) => {
      const home = await floodHome(config);
      const result = await runCli(['agent', '-m', 'read the notes many times'], home);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.trim()).toBe('Read them all.');

      const messages = sessionMessages(home);
      const calls = messages.flatMap((m) => (Array.isArray(m.tool_calls) ? (m.tool_calls as { id: string }[]) : []));
      expect(calls).toHaveLength(CALLS);
      const results = messages.filter((m) => m.role === 'tool');
      expect(results.map((m) => m.tool_call_id)).toEqual(calls.map((c) => c.id)); // each once, in call order
      const run = results.slice(0, max);
      const capped = results.slice(max);
      for (const m of run) expect(String(m.content)).toContain('buy milk');
      expect(capped).toHaveLength(CALLS - max);
      for (const m of capped) expect(m.content).toBe(capNote(max));
      expect(messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Read them all.' });

      // The model was told, in the request after the flood.
      const sent = (fake?.requests[1]?.body.messages ?? []) as Record<string, unknown>[];
      const sentResults = sent.filter((m) => m.role === 'tool');
      expect(sentResults).toHaveLength(CALLS);
      expect(sentResults.at(-1)?.content).toBe(capNote(max));

      // The next turn replays the round byte for byte: the request prefix stays cacheable.
      fake?.enqueue({ text: 'Still here.' });
      const next = await runCli(['agent', '-m', 'and now?'], home);
      expect(next.code, next.stderr).toBe(0);
      const replayed = (fake?.requests[2]?.body.messages ?? []) as Record<string, unknown>[];
      expect(JSON.stringify(replayed.slice(0, sent.length))).toBe(JSON.stringify(sent));
    },
    60_000,
  );
});
