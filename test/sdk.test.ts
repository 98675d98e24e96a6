/** The README's SDK example, run as written against a fake LLM: it must stay true. */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNanobot } from '../src/sdk.js';
import { gate } from './helpers/eventually.js';
import { type FakeLLM, startFakeLLM } from './helpers/fake-llm.js';

const ROOT = join(import.meta.dirname, '..');
const fakes: FakeLLM[] = [];
afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

function readmeExample(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const match = /<!-- sdk-example[^>]*-->\n```js\n([\s\S]*?)```/.exec(readme);
  if (!match?.[1]) throw new Error('README.md has no sdk-example block');
  return match[1];
}

/** A HOME whose config aims the agent at `fake`, with README.md in the workspace. */
function homeFor(fake: FakeLLM): { home: string; workspace: string } {
  const home = mkdtempSync(join(tmpdir(), 'nb-sdk-'));
  const workspace = join(home, '.nanobot', 'workspace');
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(workspace, 'README.md'), '# Demo\nA project that demonstrates things.\n');
  writeFileSync(
    join(home, '.nanobot', 'config.json'),
    JSON.stringify({
      agents: { defaults: { workspace, provider: 'custom', model: 'test-model' } },
      providers: { custom: { apiKey: 'k', apiBase: `${fake.url}/v1` } },
      tools: { web: { enable: false } },
    }),
  );
  return { home, workspace };
}

function runNode(file: string, home: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('SDK', () => {
  it('runs the README example through the installed package name', async () => {
    const fake = await startFakeLLM([
      { toolCalls: [{ name: 'read_file', arguments: { path: 'README.md' } }], usage: { completionTokens: 3 } },
      { text: 'A demo project.', usage: { promptTokens: 50, completionTokens: 7 } },
    ]);
    fakes.push(fake);
    const { home } = homeFor(fake);
    // Inside the package folder, `import 'nanobot-ts'` resolves to the package itself (self-reference via exports).
    const dir = join(ROOT, '.tmp');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `example-${process.pid}.mjs`);
    writeFileSync(file, readmeExample());
    try {
      const result = await runNode(file, home);
      expect(result.stderr).toContain('[read_file]');
      expect(result.stdout).toContain('A demo project.');
      expect(result.stdout).toContain('(10 tokens)'); // both model calls of the turn
      expect(result.code).toBe(0);
    } finally {
      rmSync(file, { force: true });
    }
    const toolResult = ((fake.requests[1]?.body.messages ?? []) as { role: string; content: string }[]).find(
      (m) => m.role === 'tool',
    );
    expect(toolResult?.content).toContain('A project that demonstrates things.');
  });

  it('streams events to every iterator, keeps sessions apart, and can be aborted', async () => {
    const reached = gate();
    const never = async () => {
      reached.open();
      await new Promise((resolve) => setTimeout(resolve, 30_000).unref());
      return { text: 'never' };
    };
    const fake = await startFakeLLM([{ text: 'one' }, { text: 'two' }, never]);
    fakes.push(fake);
    const { home, workspace } = homeFor(fake);
    const bot = await createNanobot({ configPath: join(home, '.nanobot', 'config.json'), workspace, env: {} });
    try {
      const turn = bot.chat('first', { session: 'app:a' });
      const seen: string[][] = [[], []];
      await Promise.all(
        seen.map(async (list) => {
          for await (const event of turn) if (event.type === 'text') list.push(event.text);
        }),
      );
      expect(seen[0]?.join('')).toBe('one');
      expect(seen[1]?.join('')).toBe('one');
      expect((await turn).content).toBe('one');

      await bot.chat('second', { session: 'app:b' });
      const second = ((fake.requests[1]?.body.messages ?? []) as { role: string }[]).filter((m) => m.role === 'user');
      expect(second).toHaveLength(1); // session app:b does not see app:a

      const controller = new AbortController();
      const slow = bot.chat('third', { session: 'app:a', signal: controller.signal });
      // Aborted once its model call reached the fake (a gate), not after a guessed 100 ms.
      await reached.promise;
      controller.abort();
      expect((await slow).stopReason).toBe('aborted');
    } finally {
      await bot.close();
    }
  });
});
