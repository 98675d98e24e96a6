/**
 * `/dream-prompt [init]` and `/evaluator-prompt [init]`, as nanobot has them: show the instructions in effect, and
 * `init` writes the built-in one into the workspace's prompts/ folder (never over a non-empty file). Driven through
 * the built CLI, on a fresh home and on a real upstream home (whose prompts/README.md names these commands).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { upstreamHome } from '../helpers/upstream-homes.js';
import { editConfig, runCli, tempHome } from './cli-helpers.js';

async function home() {
  const dir = tempHome();
  expect((await runCli(['onboard'], dir)).code).toBe(0);
  editConfig(dir, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1' }; // commands never reach the model
  });
  return { dir, workspace: join(dir, '.nanobot', 'workspace') };
}

const say = async (dir: string, text: string) => {
  const result = await runCli(['agent', '-m', text], dir);
  expect(result.code).toBe(0);
  return result.stdout;
};

describe.each([
  { command: '/dream-prompt', file: 'dream.md', marker: 'You are Dream' },
  { command: '/evaluator-prompt', file: 'evaluator.md', marker: 'evaluate_notification' },
])('$command', ({ command, file, marker }) => {
  it('shows the built-in prompt, init writes it to prompts/, then it is the custom one', async () => {
    const { dir, workspace } = await home();
    const path = join(workspace, 'prompts', file);
    const shown = await say(dir, command);
    expect(shown).toContain('built-in');
    expect(shown).toContain(`prompts/${file}`);
    expect(shown).toContain(marker);
    expect(existsSync(path)).toBe(false);

    expect(await say(dir, `${command} init`)).toContain(`Created prompts/${file}`);
    expect(readFileSync(path, 'utf8')).toContain(marker);

    writeFileSync(path, 'My own instructions. Call evaluate_notification.\n');
    expect(await say(dir, `${command} init`)).toContain('already exist');
    expect(readFileSync(path, 'utf8')).toBe('My own instructions. Call evaluate_notification.\n');
    const custom = await say(dir, command);
    expect(custom).toContain('custom for this workspace');
    expect(custom).toContain('My own instructions.');

    expect(await say(dir, `${command} reset`)).toContain(`Usage: ${command} [init]`);
  });

  it('works on a real upstream home', async () => {
    const py = upstreamHome('pyhome');
    try {
      editConfig(py.home, (c) => {
        const channels = c.channels as Record<string, unknown>;
        // Issue 17 item 1 (another branch) makes upstream's `null` here acceptable; this test is about the commands.
        if (channels.transcriptionLanguage === null) delete channels.transcriptionLanguage;
      });
      expect(readFileSync(join(py.workspace, 'prompts', 'README.md'), 'utf8')).toContain(`${command} init`);
      expect(await say(py.home, `${command} init`)).toContain(`Created prompts/${file}`);
      expect(readFileSync(join(py.workspace, 'prompts', file), 'utf8')).toContain(marker);
    } finally {
      py.cleanup();
    }
  });
});
