/**
 * Channel SDKs are installed on demand (installed package: no node_modules). With Telegram enabled and grammy
 * missing, the gateway says so and names `nanobot channels install telegram`; that command installs nothing without
 * consent (`--yes`; no terminal here to ask on), then runs npm with the pinned version into ~/.nanobot/packages;
 * and the gateway then finds grammy there. npm is a recording fake on PATH that "installs" the repo's own grammy (a
 * link), so nothing reaches a registry.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { tempHome } from '../cli/cli-helpers.js';
import { nanobot, type RunningNanobot, removeInstalledCopy, startNanobot } from './harness.js';

const ROOT = join(import.meta.dirname, '..', '..');
const GRAMMY_VERSION = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    onDemandDependencies: Record<string, string>;
  }
).onDemandDependencies.grammy;

let gateway: RunningNanobot | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});
afterAll(() => removeInstalledCopy());

/** A fake `npm` that records its arguments and links the repo's grammy into `<prefix>/node_modules`. */
function fakeNpm(home: string): { binDir: string; argsFile: string } {
  const binDir = join(home, 'fake-bin');
  const argsFile = join(home, 'npm-args.txt');
  mkdirSync(binDir);
  const grammy = realpathSync(join(ROOT, 'node_modules', 'grammy'));
  writeFileSync(
    join(binDir, 'npm'),
    [
      '#!/bin/sh',
      `printf '%s\\n' "$@" > '${argsFile}'`,
      'prefix=""; prev=""',
      'for a in "$@"; do [ "$prev" = "--prefix" ] && prefix="$a"; prev="$a"; done',
      'mkdir -p "$prefix/node_modules"',
      `ln -s '${grammy}' "$prefix/node_modules/grammy"`,
      '',
    ].join('\n'),
  );
  chmodSync(join(binDir, 'npm'), 0o755);
  return { binDir, argsFile };
}

function telegramHome(): string {
  const home = tempHome();
  mkdirSync(join(home, '.nanobot'), { mode: 0o700 });
  const config = {
    agents: { defaults: { provider: 'custom', model: 'm' } },
    providers: { custom: { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1' } },
    gateway: { heartbeat: { enabled: false } },
    channels: {
      websocket: { enabled: false },
      // Port 9 on loopback: nothing answers, so the channel never reaches a real Bot API.
      telegram: { enabled: true, token: '123:abc', allowFrom: ['*'], apiBase: 'http://127.0.0.1:9' },
    },
  };
  writeFileSync(join(home, '.nanobot', 'config.json'), JSON.stringify(config));
  return home;
}

describe('channel SDKs installed on demand (installed package)', () => {
  it('missing → named with the install command; installed only with consent; then found in ~/.nanobot/packages', async () => {
    const home = telegramHome();
    const packages = join(home, '.nanobot', 'packages');
    const { binDir, argsFile } = fakeNpm(home);
    const env = { PATH: `${binDir}:${process.env.PATH ?? '/usr/bin:/bin'}` };

    const refused = await nanobot(['gateway', '--port', '0'], home, env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('The Telegram channel needs the grammy package, which is not installed');
    expect(refused.stderr).toContain('nanobot channels install telegram');

    // No terminal to ask on and no --yes: nothing is installed, and the error says how.
    const unasked = await nanobot(['channels', 'install', 'telegram'], home, env);
    expect(unasked.code).toBe(1);
    expect(unasked.stderr).toContain(`grammy@${GRAMMY_VERSION}`);
    expect(unasked.stderr).toContain('nanobot channels install telegram --yes');
    expect(existsSync(argsFile)).toBe(false);
    expect(existsSync(join(packages, 'node_modules'))).toBe(false);

    const status = await nanobot(['channels', 'status'], home, env);
    expect(status.stdout).toContain('grammy not installed: run `nanobot channels install telegram`');

    const login = await nanobot(['channels', 'login', 'telegram'], home, env);
    expect(login.stdout).toContain('not installed yet: run `nanobot channels install telegram`');
    expect(existsSync(argsFile)).toBe(false);

    const install = await nanobot(['channels', 'install', 'telegram', '--yes'], home, env);
    expect(install.stderr).toBe('');
    expect(install.code).toBe(0);
    expect(readFileSync(argsFile, 'utf8').trim().split('\n')).toEqual([
      'install',
      '--prefix',
      packages,
      '--no-audit',
      '--no-fund',
      '--save-exact',
      `grammy@${GRAMMY_VERSION}`,
    ]);
    expect(install.stdout).toContain(`Installed grammy@${GRAMMY_VERSION}`);
    expect(JSON.parse(readFileSync(join(packages, 'package.json'), 'utf8'))).toMatchObject({ private: true });
    const again = await nanobot(['channels', 'install', 'telegram'], home, env);
    expect(again.stdout).toContain('grammy is already installed.');
    expect((await nanobot(['channels', 'status'], home, env)).stdout).not.toContain('not installed');

    // The gateway of the installed package (no node_modules of its own) loads grammy from ~/.nanobot/packages.
    gateway = startNanobot(['gateway', '--port', '0'], home);
    await gateway.waitForOutput(/gateway: listening on .* 1 channel\(s\)/, 'the gateway with its Telegram channel');
    expect(gateway.output()).not.toContain('needs the grammy package');
  }, 60_000);

  it('names every on-demand package for `channels install`, and refuses names that have none', async () => {
    const home = tempHome();
    const unknown = await nanobot(['channels', 'install', 'websocket'], home);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(
      'telegram, discord, slack, feishu, matrix, mattermost, wecom, mochat, dingtalk, msteams, whatsapp, email, bedrock',
    );
  });
});
