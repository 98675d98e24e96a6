/**
 * A newcomer's first minutes, as the README tells them: a fresh clone of this commit, the package packed and
 * installed globally (into a throwaway prefix), then `nanobot` from PATH with only OPENAI_API_KEY set and
 * providers.openai.apiBase pointed at the loopback fake LLM. Offline: the package has no runtime dependencies, so
 * `npm install -g <tgz> --offline` needs nothing from a registry. The README's `npm install` in the clone is stood in
 * for by a link to this checkout's node_modules (the same package-lock.json): installing 500 MB of dev tools again
 * would only test npm, and take minutes of CI.
 */
import { execFile, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'nb-newcomer-'));
let fake: FakeLLM | undefined;

afterAll(async () => {
  await fake?.close();
  // The clone's node_modules is a link: rm removes the link, never what it points to.
  rmSync(scratch, { recursive: true, force: true });
});

/** npm with no registry in reach: offline, its own cache, no audit or funding calls. */
function npmEnv(home: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    HOME: home,
    npm_config_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    npm_config_cache: join(home, 'npm-cache'),
  };
}

/** Bytes of every file under `dir` (links not followed). */
function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += sizeOf(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

describe('a newcomer: fresh clone → README install → nanobot agent -m with only OPENAI_API_KEY', () => {
  it('installs a global `nanobot` without channel SDKs, and it answers through OpenAI', async () => {
    const clone = join(scratch, 'clone');
    const npmHome = join(scratch, 'npm-home');
    mkdirSync(npmHome);
    await run('git', ['clone', '--quiet', ROOT, clone]);
    // Stands in for `npm install` (see the file comment); `npm pack` runs `prepare`, which builds dist/ from the clone.
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(clone, 'node_modules'));
    const packed = await run('npm', ['pack', '--silent', '--pack-destination', scratch], {
      cwd: clone,
      env: npmEnv(npmHome),
      maxBuffer: 16 * 1024 * 1024,
    });
    const tarball = join(scratch, packed.stdout.trim().split('\n').at(-1) ?? '');
    expect(existsSync(tarball)).toBe(true);

    const prefix = join(scratch, 'prefix');
    await run('npm', ['install', '-g', tarball, '--prefix', prefix], { env: npmEnv(npmHome) });
    const installed = join(prefix, 'lib', 'node_modules', 'nanobot-ts');
    expect(existsSync(join(prefix, 'bin', 'nanobot'))).toBe(true);
    // Nothing but the package itself: no channel SDK came along.
    expect(existsSync(join(installed, 'node_modules'))).toBe(false);
    const megabytes = sizeOf(installed) / 1e6;
    console.info(
      `newcomer: tarball ${(statSync(tarball).size / 1e6).toFixed(1)} MB, installed ${megabytes.toFixed(1)} MB`,
    );
    expect(megabytes).toBeLessThan(30);

    fake = await startFakeLLM([{ text: 'Hello! How can I help?' }]);
    const home = join(scratch, 'home');
    mkdirSync(join(home, '.nanobot'), { recursive: true, mode: 0o700 });
    writeFileSync(
      join(home, '.nanobot', 'config.json'),
      JSON.stringify({ providers: { openai: { apiBase: `${fake.url}/v1` } } }),
    );
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      // `nanobot` by name: the install put it on this PATH.
      const child = spawn('nanobot', ['agent', '-m', 'Hello'], {
        env: {
          PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`,
          HOME: home,
          OPENAI_API_KEY: 'sk-test-key',
        },
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
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(result.stderr).toContain('using openai/gpt-5 (key from $OPENAI_API_KEY)');
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 0, stdout: 'Hello! How can I help?\n' });
    expect(fake.requests[0]?.body.model).toBe('gpt-5');
    expect(fake.requests[0]?.headers.authorization).toBe('Bearer sk-test-key');
  }, 240_000);
});
