/**
 * The data dir holds API keys and chats: the built CLI creates `~/.nanobot` 0700, and tightens a loose one (as
 * nanobot leaves it: 0755) on `onboard` or any other command, saying so once.
 */
import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempHome } from '../cli/cli-helpers.js';

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('~/.nanobot permissions (built CLI)', () => {
  it('onboard creates ~/.nanobot 0700 and says nothing about it', async () => {
    const home = tempHome();
    const result = await runCli(['onboard'], home);
    expect(result.code).toBe(0);
    expect(modeOf(join(home, '.nanobot'))).toBe(0o700);
    expect(modeOf(join(home, '.nanobot', 'config.json'))).toBe(0o600);
    expect(result.stderr).not.toMatch(/0700/);
  });

  it.each(['755', '775', '777', '750', '705', '711'])(
    'onboard tightens an existing ~/.nanobot of mode 0%s to 0700, once',
    async (octal) => {
      const loose = Number.parseInt(octal, 8);
      const home = tempHome();
      const dir = join(home, '.nanobot');
      mkdirSync(dir);
      chmodSync(dir, loose);
      const first = await runCli(['onboard'], home);
      expect(first.code).toBe(0);
      expect(modeOf(dir)).toBe(0o700);
      expect(first.stderr).toContain(`was 0${octal}`);
      const second = await runCli(['onboard'], home);
      expect(second.stderr).not.toMatch(/was 0/);
    },
  );

  it('any command tightens a loose ~/.nanobot left by nanobot (0755 with a config inside)', async () => {
    const home = tempHome();
    const dir = join(home, '.nanobot');
    mkdirSync(dir);
    writeFileSync(join(dir, 'config.json'), '{}\n');
    chmodSync(dir, 0o755);
    const status = await runCli(['status'], home);
    expect(modeOf(dir)).toBe(0o700);
    expect(status.stderr.match(/is 0700 now/g)).toHaveLength(1);
  });

  it('leaves a --config folder of another name alone (it may be a project folder)', async () => {
    const home = tempHome();
    const project = join(home, 'project');
    mkdirSync(project);
    chmodSync(project, 0o755);
    const result = await runCli(['onboard', '--config', join(project, 'config.json')], home);
    expect(result.code).toBe(0);
    expect(modeOf(project)).toBe(0o755);
  });
});
