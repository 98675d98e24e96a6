/**
 * Scripts written for nanobot's CLI run against ours (the built binary): options before the sub-command, `onboard
 * --refresh`, `agent --classic/--no-tui/--theme/--no-logs`, `-v` as --verbose after a command, the service flags.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { editConfig, runCli, tempHome } from './cli-helpers.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function homeWithFake(replies: { text: string }[]): Promise<string> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  fake = await startFakeLLM(replies);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${fake?.url}/v1` };
  });
  return home;
}

describe('common options before the sub-command', () => {
  it('nanobot -c FILE status / -w DIR / gateway -c FILE status use them, as after the command', async () => {
    const home = tempHome();
    const alt = join(home, 'alt.json');
    await runCli(['onboard', '-c', alt], home);
    const spellings = [
      ['-c', alt, 'status'],
      ['--config', alt, 'status'],
      [`--config=${alt}`, 'status'],
      ['status', '-c', alt],
    ];
    for (const args of spellings) {
      const result = await runCli(args, home);
      expect(result.stderr, args.join(' ')).not.toMatch(/unknown option|error:/);
      expect(result.stdout, args.join(' ')).toContain(`Config:     ${alt}`);
    }
    const ws = join(home, 'other-ws');
    const withWs = await runCli(['-w', ws, 'status'], home);
    expect(withWs.stdout).toContain(`Workspace:  ${ws}`);

    const gw = await runCli(['gateway', '-c', alt, 'status'], home);
    expect(gw.stdout).toContain('Gateway: not running');
    const top = await runCli(['-c', alt, 'gateway', 'status'], home);
    expect(top.stdout).toContain('Gateway: not running');
  });

  it('the sub-command wins when both say -c, and -v stays --version at the top', async () => {
    const home = tempHome();
    const a = join(home, 'a.json');
    const b = join(home, 'b.json');
    for (const file of [a, b]) expect((await runCli(['onboard', '-c', file], home)).code).toBe(0);
    const both = await runCli(['-c', a, 'status', '-c', b], home);
    expect(both.stdout).toContain(`Config:     ${b}`);
    const version = await runCli(['-v'], home);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe("nanobot's agent flags", () => {
  it('--classic, --no-tui, --theme, --no-logs, --markdown and -v are accepted; the answer is the same', async () => {
    const home = await homeWithFake([{ text: 'one' }, { text: 'two' }, { text: 'three' }, { text: 'four' }]);
    const variants = [
      ['--classic', '--theme', 'dark'],
      ['--no-tui', '--theme', 'LIGHT', '--no-logs'],
      ['--markdown', '--logs', '--theme=auto'],
      ['-v', '--no-markdown'],
    ];
    const answers: string[] = [];
    for (const flags of variants) {
      const result = await runCli(['agent', ...flags, '-m', 'hi'], home);
      expect(result.stderr, flags.join(' ')).not.toMatch(/unknown option|invalid/);
      expect(result.code, flags.join(' ')).toBe(0);
      answers.push(result.stdout.trim());
    }
    expect(answers).toEqual(['one', 'two', 'three', 'four']);
  });

  it('--theme with a value nanobot refuses is refused here too, naming the choices', async () => {
    const home = tempHome();
    for (const theme of ['purple', '', 'darkk']) {
      const result = await runCli(['agent', '--theme', theme, '-m', 'hi'], home);
      expect(result.code, theme).not.toBe(0);
      expect(result.stderr, theme).toMatch(/auto, dark or light/);
    }
  });
});

describe('onboard --refresh', () => {
  it('keeps every value, adds the missing keys and asks nothing', async () => {
    const home = tempHome();
    await runCli(['onboard'], home);
    const path = join(home, '.nanobot', 'config.json');
    writeFileSync(path, JSON.stringify({ agents: { defaults: { model: 'my-model', provider: 'custom' } } }));
    const result = await runCli(['onboard', '--refresh'], home);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Added missing keys');
    const after = JSON.parse(readFileSync(path, 'utf8')) as {
      agents: { defaults: Record<string, unknown> };
      gateway?: unknown;
    };
    expect(after.agents.defaults.model).toBe('my-model');
    expect(after.agents.defaults.provider).toBe('custom');
    expect(after.gateway).toBeDefined();
  });
});

describe('gateway service commands (dry run through the built CLI)', () => {
  it('install-service --manager/--no-start/--no-enable/-p and uninstall-service print what they would do', async () => {
    const home = tempHome();
    const install = await runCli(
      ['gateway', 'install-service', '--manager', 'systemd', '--no-start', '-p', '18999', '--dry-run'],
      home,
    );
    expect(install.code).toBe(0);
    expect(install.stdout).toMatch(/ExecStart=.*gateway --port 18999\n/);
    expect(install.stdout).toContain('systemctl --user enable nanobot-gateway.service');
    expect(install.stdout).not.toContain('--now');

    const launchd = await runCli(['gateway', 'install-service', '--manager', 'launchd', '--dry-run'], home);
    expect(launchd.stdout).toContain('launchctl bootstrap');

    const bad = await runCli(['gateway', 'install-service', '--manager', 'upstart', '--dry-run'], home);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/auto, systemd or launchd/);

    const uninstall = await runCli(['gateway', 'uninstall-service', '--manager', 'systemd', '--dry-run'], home);
    expect(uninstall.code).toBe(0);
    expect(uninstall.stdout).toContain('systemctl --user disable --now nanobot-gateway.service');
    expect(existsSync(join(home, '.config'))).toBe(false);
  });
});

describe('channels login websocket', () => {
  it("prints this config's URL and where its token is, not a fixed port and a placeholder", async () => {
    const home = tempHome();
    await runCli(['onboard'], home);
    editConfig(home, (c) => {
      c.channels = { websocket: { host: '127.0.0.1', port: 28765 } };
    });
    const result = await runCli(['channels', 'login', 'websocket'], home);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('http://127.0.0.1:28765/');
    expect(result.stdout).toContain(join(home, '.nanobot', 'webui-token'));
    expect(result.stdout).not.toMatch(/:8765\/|<data dir>/);

    editConfig(home, (c) => {
      c.channels = { websocket: { port: 28766, token: 'a-fixed-token-of-enough-length' } };
    });
    const fixed = await runCli(['channels', 'login', 'websocket'], home);
    expect(fixed.stdout).toContain('http://127.0.0.1:28766/');
    expect(fixed.stdout).toContain('channels.websocket.token');
    expect(fixed.stdout).not.toContain('a-fixed-token-of-enough-length');

    const alt = join(home, 'alt');
    await runCli(['onboard', '-c', join(alt, 'config.json')], home);
    const other = await runCli(['-c', join(alt, 'config.json'), 'channels', 'login', 'websocket'], home);
    expect(other.stdout).toContain(join(alt, 'webui-token'));

    editConfig(home, (c) => {
      c.channels = { websocket: { enabled: false } };
    });
    const off = await runCli(['channels', 'login', 'websocket'], home);
    expect(off.stdout).toContain('is off');
  });
});
