/** `nanobot provider login/logout`, `nanobot doctor` and the resolution lines of `nanobot status`, end to end. */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { type FakeWeb, json, startFakeWeb } from '../helpers/fake-web.js';
import { editConfig, runCli, tempHome, withoutFirstRunNote } from './cli-helpers.js';

let web: FakeWeb | undefined;
let llm: FakeLLM | undefined;
afterEach(async () => {
  await web?.close();
  await llm?.close();
  web = undefined;
  llm = undefined;
});

async function fakeGitHub(): Promise<Record<string, string>> {
  web = await startFakeWeb({
    routes: {
      '/device': json({
        device_code: 'd',
        user_code: 'CODE-0001',
        verification_uri: 'https://github.com/login/device',
        interval: 1,
      }),
      '/token': json({ access_token: 'gho_cli' }),
      '/user': json({ login: 'octocat' }),
      '/copilot': json({ token: 'cop', expires_at: Math.floor(Date.now() / 1000) + 1800 }),
    },
  });
  return {
    NANOBOT_GITHUB_DEVICE_CODE_URL: web.url('/device'),
    NANOBOT_GITHUB_ACCESS_TOKEN_URL: web.url('/token'),
    NANOBOT_GITHUB_USER_URL: web.url('/user'),
    NANOBOT_COPILOT_TOKEN_URL: web.url('/copilot'),
  };
}

describe('nanobot provider login / logout', () => {
  it('signs in to GitHub Copilot with a device code, can make it the default, and signs out', async () => {
    const home = tempHome();
    const env = await fakeGitHub();
    const login = await runCli(['provider', 'login', 'github-copilot', '--set-main'], home, env);
    expect(withoutFirstRunNote(login.stderr)).toBe('');
    expect(login.code).toBe(0);
    expect(login.stdout).toContain('enter the code CODE-0001');
    expect(login.stdout).toContain('Signed in to GitHub Copilot as octocat.');
    const tokenFile = join(home, '.nanobot', 'auth', 'github-copilot.json');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, '.nanobot', 'auth')).mode & 0o777).toBe(0o700);
    const config = JSON.parse(readFileSync(join(home, '.nanobot', 'config.json'), 'utf8'));
    expect(config.agents.defaults).toMatchObject({ provider: 'github_copilot', model: 'github-copilot/gpt-4.1' });

    const status = await runCli(['status'], home);
    expect(status.stdout).toContain('github_copilot       signed in as octocat');
    expect(status.stdout).toMatch(/Resolved: +provider "github_copilot" is set explicitly; sends "gpt-4\.1"/);
    const doctor = await runCli(['doctor'], home);
    expect(doctor.stdout).toContain('✓ Sign-in: GitHub Copilot as octocat');
    expect(doctor.code).toBe(0);

    const logout = await runCli(['provider', 'logout', 'github-copilot'], home);
    expect(logout.stdout).toContain('Signed out of GitHub Copilot');
    expect(existsSync(tokenFile)).toBe(false);
    const after = await runCli(['doctor'], home);
    expect(after.code).toBe(1);
    expect(after.stdout).toContain('✗ Sign-in: GitHub Copilot is not signed in');
    expect(after.stdout).toContain('nanobot provider login github-copilot');
  });

  it('signs in to OpenAI Codex with a code pasted on stdin (no browser on this machine)', async () => {
    const home = tempHome();
    web = await startFakeWeb({
      routes: { '/oauth/token': json({ access_token: 'at', refresh_token: 'rt', expires_in: 3600 }) },
    });
    const env = {
      NANOBOT_OPENAI_CODEX_AUTHORIZE_URL: web.url('/oauth/authorize'),
      NANOBOT_OPENAI_CODEX_TOKEN_URL: web.url('/oauth/token'),
      NANOBOT_OPENAI_CODEX_CALLBACK_PORT: '0',
    };
    const login = await runCli(['provider', 'login', 'openai-codex'], home, env, 'pasted-code\n');
    expect(withoutFirstRunNote(login.stderr)).toBe('');
    expect(login.stdout).toContain(`${web.url('/oauth/authorize')}?response_type=code`);
    expect(login.stdout).toContain('Signed in to OpenAI Codex.');
    const exchange = new URLSearchParams(web.requests[0]?.body);
    expect(exchange.get('code')).toBe('pasted-code');
    expect(exchange.get('code_verifier')?.length).toBeGreaterThanOrEqual(43);
    expect(statSync(join(home, '.nanobot', 'auth', 'openai-codex.json')).mode & 0o777).toBe(0o600);
  });

  it('refuses providers that do not sign in with OAuth', async () => {
    const result = await runCli(['provider', 'login', 'anthropic'], tempHome());
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('"anthropic" does not sign in with OAuth.');
    expect(result.stderr).not.toMatch(/at .*\.js/);
  });
});

describe('nanobot doctor', () => {
  it('explains how the model resolved and fails, exit 1, when its key is missing', async () => {
    const home = tempHome();
    const missing = await runCli(['doctor'], home);
    expect(missing.code).toBe(1);
    // No model configured and no key anywhere: every variable looked for, and the setup command.
    expect(missing.stdout).toContain(
      '✗ Model anthropic/claude-opus-4-5: No API key found: nanobot looked for ANTHROPIC_API_KEY',
    );
    expect(missing.stdout).toContain('OPENAI_API_KEY');
    expect(missing.stdout).toContain('nanobot onboard');

    const ok = await runCli(['doctor'], home, { ANTHROPIC_API_KEY: 'sk-ant-0123456789' });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain(
      '✓ Model anthropic/claude-opus-4-5: provider anthropic: model prefix "anthropic/" names anthropic; ' +
        'sends "claude-opus-4-5" to https://api.anthropic.com',
    );
    expect(ok.stdout).toContain('✓ API key: sk-a…6789 from $ANTHROPIC_API_KEY');
  });

  it('checks fallbacks and settings, and --ping sends one tiny request', async () => {
    const home = tempHome();
    await runCli(['onboard'], home);
    llm = await startFakeLLM([{ text: 'OK' }]);
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'test-model';
      c.agents.defaults.fallbackModels = ['fast', { model: 'groq/llama-3.3-70b', provider: 'auto' }];
      c.modelPresets = { fast: { model: 'deepseek/deepseek-chat' } };
      c.providers.custom = { apiKey: 'k', apiBase: `${llm?.url}/v1` };
      c.providers.deepseek = { apiKey: 'dk' };
    });
    const result = await runCli(['doctor', '--ping'], home);
    expect(result.stdout).toContain('✓ Fallback preset "fast": deepseek/deepseek-chat via deepseek');
    expect(result.stdout).toContain(
      '! Fallback fallbackModels[1]: groq/llama-3.3-70b: No API key for provider "groq".',
    );
    expect(result.stdout).toMatch(/✓ Ping: custom answered "OK" in \d+ ms/);
    expect(result.code).toBe(0);
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]?.body).toMatchObject({ model: 'test-model', max_tokens: 16 });
  });
});
