import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { editConfig, runCli, tempHome, withoutFirstRunNote } from './cli-helpers.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const writeThenRead = () => [
  { toolCalls: [{ name: 'write_file', arguments: { path: 'notes/todo.txt', content: 'buy milk\ncall mom\n' } }] },
  { toolCalls: [{ name: 'read_file', arguments: { path: 'notes/todo.txt' } }] },
  { text: 'Saved your list: buy milk, call mom.' },
];

function sessionLines(home: string): Record<string, unknown>[] {
  const root = join(home, '.nanobot', 'sessions');
  const [wsId] = readdirSync(root);
  const file = join(root, wsId ?? '', `${Buffer.from('cli:direct').toString('base64url')}.jsonl`);
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Text of every message of one recorded request, whatever the wire format. */
function requestText(body: unknown): string {
  return JSON.stringify(body);
}

describe.each([
  { wire: 'openai', provider: 'custom', apiBase: (url: string) => `${url}/v1`, path: '/v1/chat/completions' },
  { wire: 'anthropic', provider: 'anthropic', apiBase: (url: string) => url, path: '/v1/messages' },
])('nanobot agent -m over the $wire API', ({ provider, apiBase, path }) => {
  it('runs write_file then read_file in the workspace and prints the final answer', async () => {
    const home = tempHome();
    const onboard = await runCli(['onboard'], home);
    expect(onboard.code).toBe(0);
    expect(existsSync(join(home, '.nanobot', 'workspace', 'SOUL.md'))).toBe(true);

    fake = await startFakeLLM(writeThenRead());
    editConfig(home, (c) => {
      c.agents.defaults.provider = provider;
      c.agents.defaults.model = 'test-model';
      c.providers[provider] = { apiKey: 'test-key', apiBase: apiBase(fake?.url ?? '') };
    });

    const result = await runCli(['agent', '-m', 'Write my todo list'], home);
    expect(result.stderr).not.toMatch(/Error/);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('Saved your list: buy milk, call mom.');
    expect(result.stderr).toMatch(/write_file/);
    expect(readFileSync(join(home, '.nanobot', 'workspace', 'notes', 'todo.txt'), 'utf8')).toBe('buy milk\ncall mom\n');

    const requests = fake.requests.filter((r) => r.path === path);
    expect(requests).toHaveLength(3);
    expect(requests[0]?.body).toMatchObject({ model: 'test-model', stream: true });
    // Our own prompt text and tool schemas are ASCII: one non-ASCII character would make every request body a
    // two-byte string, doubling the gateway's largest allocation.
    expect(JSON.stringify(requests[0]?.body)).toMatch(/^[\x20-\x7e]*$/);
    expect(requestText(requests[2]?.body)).toContain('1| buy milk');

    const lines = sessionLines(home);
    expect(lines[0]).toMatchObject({ _type: 'metadata', key: 'cli:direct' });
    // Later metadata lines (appended as the turn progresses) override the first, as in nanobot.
    const messages = lines.filter((l) => l._type === undefined);
    const roles = messages.map((l) => l.role);
    expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    expect(String(messages[0]?.content)).toMatch(/^Write my todo list/);
    expect(messages.at(-1)?.content).toBe('Saved your list: buy milk, call mom.');

    // A second message in the same session carries the first turn to the model.
    fake.enqueue({ text: 'You asked me to write your todo list.' });
    const second = await runCli(['agent', '-m', 'What did I ask before?'], home);
    expect(second.code).toBe(0);
    expect(second.stdout.trim()).toBe('You asked me to write your todo list.');
    const last = fake.requests.at(-1)?.body;
    expect(requestText(last)).toContain('Write my todo list');
    expect(requestText(last)).toContain('Saved your list: buy milk, call mom.');
  });
});

describe('nanobot agent when it cannot get an answer', () => {
  it('exits non-zero naming the provider and the key to set, without a stack trace', async () => {
    const home = tempHome();
    const result = await runCli(['agent', '-m', 'hi'], home);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/anthropic/i);
    expect(result.stderr).toMatch(/ANTHROPIC_API_KEY/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(join(home, '.nanobot', 'config.json'))).toBe(true);
  });

  it('retries an unreachable provider, then says which setting to check', async () => {
    const home = tempHome();
    await runCli(['onboard'], home);
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'm';
      c.providers.custom = { apiBase: 'http://127.0.0.1:1/v1', apiKey: 'k' };
    });
    const result = await runCli(['agent', '-m', 'hi'], home);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/retrying in 1 s/);
    expect(result.stderr).toMatch(/Error: custom: Could not reach the provider/);
    expect(result.stderr).toMatch(/providers\.custom\.apiBase/);
  });

  it('reports a rejected key as an auth problem without retrying', async () => {
    const home = tempHome();
    fake = await startFakeLLM([{ status: 401, errorBody: { error: { message: 'invalid api key' } } }]);
    const result = await runCli(['agent', '-m', 'hi'], home, {
      ANTHROPIC_API_KEY: 'sk-ant-wrong',
      NANOBOT_PROVIDERS__ANTHROPIC__API_BASE: fake.url,
    });
    expect(result.code).toBe(1);
    expect(fake.requests).toHaveLength(1);
    expect(result.stderr).toMatch(/invalid api key/);
    expect(result.stderr).toMatch(/providers\.anthropic\.apiKey/);
  });

  it('uses a key from the provider’s usual environment variable', async () => {
    const home = tempHome();
    fake = await startFakeLLM([{ text: 'hello from env key' }]);
    const result = await runCli(['agent', '-m', 'hi'], home, {
      ANTHROPIC_API_KEY: 'sk-ant-env',
      NANOBOT_PROVIDERS__ANTHROPIC__API_BASE: fake.url,
    });
    expect(withoutFirstRunNote(result.stderr)).toBe('');
    expect(result.stdout.trim()).toBe('hello from env key');
    expect(fake.requests[0]?.headers['x-api-key']).toBe('sk-ant-env');
    expect(fake.requests[0]?.body).toMatchObject({ model: 'claude-opus-4-5' });
  });
});

describe('nanobot agent proactive messages', () => {
  it('prints what the agent sends with the message tool before the answer', async () => {
    const home = tempHome();
    fake = await startFakeLLM([
      { toolCalls: [{ name: 'message', arguments: { content: 'Working on it…' } }] },
      { text: 'Finished.' },
    ]);
    const result = await runCli(['agent', '-m', 'do a long thing'], home, {
      ANTHROPIC_API_KEY: 'k',
      NANOBOT_PROVIDERS__ANTHROPIC__API_BASE: fake.url,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('Working on it…\nFinished.\n');
  });
});

describe('nanobot agent interactive', () => {
  it('answers every line of piped input in order, and /exit ends the chat', async () => {
    const home = tempHome();
    fake = await startFakeLLM([{ text: 'first reply' }, { text: 'second reply' }, { text: 'never' }]);
    const env = { ANTHROPIC_API_KEY: 'k', NANOBOT_PROVIDERS__ANTHROPIC__API_BASE: fake.url };
    const result = await runCli(['agent'], home, env, 'one\ntwo\n/exit\nthree\n');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('first reply');
    expect(result.stdout.indexOf('second reply')).toBeGreaterThan(result.stdout.indexOf('first reply'));
    expect(result.stdout).not.toContain('never');
    expect(fake.requests).toHaveLength(2);
  });
});

describe('nanobot agent /dream', () => {
  it('moves new history into MEMORY.md, commits it to git, and /dream-log shows it', async () => {
    const home = tempHome();
    await runCli(['onboard'], home);
    const workspace = join(home, '.nanobot', 'workspace');
    const entry = { cursor: 1, timestamp: '2026-11-29 10:00', content: 'The user said they prefer tea over coffee.' };
    writeFileSync(join(workspace, 'memory', 'history.jsonl'), `${JSON.stringify(entry)}\n`);
    fake = await startFakeLLM([
      {
        toolCalls: [
          {
            name: 'edit_file',
            arguments: {
              path: 'memory/MEMORY.md',
              old_text: '## Preferences',
              new_text: '## Preferences\n\n- Prefers tea over coffee',
            },
          },
        ],
      },
      { text: 'Recorded the tea preference.' },
    ]);
    const env = { ANTHROPIC_API_KEY: 'k', NANOBOT_PROVIDERS__ANTHROPIC__API_BASE: fake.url };
    const dream = await runCli(['agent', '-m', '/dream'], home, env);
    expect(dream.code).toBe(0);
    expect(readFileSync(join(workspace, 'memory', 'MEMORY.md'), 'utf8')).toContain('- Prefers tea over coffee');
    expect(readFileSync(join(workspace, 'memory', '.dream_cursor'), 'utf8').trim()).toBe('1');
    const log = await runCli(['agent', '-m', '/dream-log'], home, env);
    expect(log.stdout).toMatch(/MEMORY\.md/);
    expect(fake.requests).toHaveLength(2);
  });
});

describe('nanobot CLI basics', () => {
  it('prints the version', async () => {
    const result = await runCli(['--version'], tempHome());
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('reports a broken config in one line with the path of the bad key', async () => {
    const home = tempHome();
    await runCli(['onboard'], home);
    editConfig(home, (c) => {
      c.agents.defaults.maxTokens = 'many';
    });
    const result = await runCli(['status'], home);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/agents\.defaults\.maxTokens: expected a number/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('status shows the resolved provider and masks keys', async () => {
    const home = tempHome();
    const result = await runCli(['status'], home, { OPENROUTER_API_KEY: 'sk-or-v1-abcdefghijklmnop' });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Model:\s+anthropic\/claude-opus-4-5/);
    expect(result.stdout).toMatch(/openrouter/);
    expect(result.stdout).not.toContain('abcdefghijklmnop');
    expect(result.stdout).toContain('sk-o…mnop');
  });

  it('config schema prints a JSON Schema', async () => {
    const result = await runCli(['config', 'schema'], tempHome());
    expect(result.code).toBe(0);
    const schema = JSON.parse(result.stdout) as { properties: Record<string, unknown> };
    expect(schema.properties).toHaveProperty('agents');
  });
});
