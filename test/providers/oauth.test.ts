/** OAuth sign-in and token refresh against loopback fakes of GitHub, Copilot and OpenAI's auth server. */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createProvider, resolveProvider } from '../../src/providers/index.js';
import { CopilotCredentials, loginGitHubCopilot } from '../../src/providers/oauth/github-copilot.js';
import {
  accountIdOf,
  CodexCredentials,
  loginOpenAICodex,
  parsePasted,
} from '../../src/providers/oauth/openai-codex.js';
import { TokenStore } from '../../src/providers/oauth/store.js';
import type { ResolvedProvider } from '../../src/providers/resolve.js';
import { startFakeLLM } from '../helpers/fake-llm.js';
import { type FakeWeb, json, startFakeWeb } from '../helpers/fake-web.js';

let web: FakeWeb | undefined;
afterEach(async () => {
  await web?.close();
  web = undefined;
});

const authDir = async () => join(await mkdtemp(join(tmpdir(), 'nb-oauth-')), 'auth');
const form = (body: string) => Object.fromEntries(new URLSearchParams(body));
const mode = async (path: string) => (await stat(path)).mode & 0o777;

/** A JWT-shaped token whose claims carry a ChatGPT account id (the signature is never checked by the client). */
function fakeJwt(accountId: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none' })}.${part({ 'https://api.openai.com/auth': { chatgpt_account_id: accountId } })}.sig`;
}

async function fakeGitHub(copilotApi?: string) {
  let polls = 0;
  let exchanges = 0;
  web = await startFakeWeb({
    routes: {
      '/login/device/code': json({
        device_code: 'dev-1',
        user_code: 'WXYZ-1234',
        verification_uri: 'https://github.com/login/device',
        interval: 5,
        expires_in: 900,
      }),
      '/login/oauth/access_token': () => {
        polls++;
        if (polls === 1) return json({ error: 'authorization_pending' });
        if (polls === 2) return json({ error: 'slow_down' });
        return json({ access_token: 'gho_token', token_type: 'bearer' });
      },
      '/user': json({ login: 'octocat' }),
      '/copilot_internal/v2/token': () => {
        exchanges++;
        return json({
          token: `copilot-${exchanges}`,
          expires_at: Math.floor(Date.now() / 1000) + 1800,
          refresh_in: 1500,
          ...(copilotApi ? { endpoints: { api: copilotApi } } : {}),
        });
      },
    },
  });
  const env = {
    NANOBOT_GITHUB_DEVICE_CODE_URL: web.url('/login/device/code'),
    NANOBOT_GITHUB_ACCESS_TOKEN_URL: web.url('/login/oauth/access_token'),
    NANOBOT_GITHUB_USER_URL: web.url('/user'),
    NANOBOT_COPILOT_TOKEN_URL: web.url('/copilot_internal/v2/token'),
  };
  return { web, env, exchanges: () => exchanges };
}

describe('GitHub Copilot sign-in (device flow)', () => {
  it('shows the code, polls politely, checks Copilot access and stores the token 0600 in a 0700 folder', async () => {
    const { web, env } = await fakeGitHub();
    const store = new TokenStore(await authDir());
    const printed: string[] = [];
    const waits: number[] = [];
    const token = await loginGitHubCopilot(store, env, {
      print: (line) => printed.push(line),
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    expect(printed[0]).toBe('Open https://github.com/login/device and enter the code WXYZ-1234');
    expect(waits).toEqual([5000, 5000, 10_000]); // interval, then +5 s after slow_down
    expect(token).toEqual({ access: 'gho_token', accountId: 'octocat' });
    const poll = web.requests.find((r) => r.url.pathname === '/login/oauth/access_token');
    expect(form(poll?.body ?? '')).toMatchObject({
      device_code: 'dev-1',
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
    });
    const file = store.pathOf('github-copilot.json');
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(token);
    expect(await mode(file)).toBe(0o600);
    expect(await mode(store.dir)).toBe(0o700);
  });

  it('says clearly when the account has no Copilot', async () => {
    const { web, env } = await fakeGitHub();
    web.route('/copilot_internal/v2/token', json({ message: 'Resource not accessible' }, 403));
    const store = new TokenStore(await authDir());
    await expect(loginGitHubCopilot(store, env, { print: () => {}, sleep: async () => {} })).rejects.toThrow(
      /cannot use Copilot/,
    );
    expect(await store.read('github-copilot.json')).toBeUndefined();
  });
});

describe('Copilot credentials', () => {
  it('exchanges the GitHub token once and again only shortly before the Copilot token expires', async () => {
    const { web, env, exchanges } = await fakeGitHub();
    const store = new TokenStore(await authDir());
    await store.write('github-copilot.json', { access: 'gho_token' });
    let now = Date.now();
    const credentials = new CopilotCredentials(store, env, fetch, () => now);
    expect((await credentials.get()).apiKey).toBe('copilot-1');
    now += 10 * 60_000;
    expect((await credentials.get()).apiKey).toBe('copilot-1');
    now += 20 * 60_000; // past expires_at − 60 s
    const renewed = await credentials.get();
    expect(renewed.apiKey).toBe('copilot-2');
    expect(renewed.headers['Editor-Version']).toBe('vscode/1.99.0');
    expect(exchanges()).toBe(2);
    expect(web.requests.at(-1)?.headers.authorization).toBe('token gho_token');
  });

  it('chat requests carry the Copilot token and editor headers; a rejected token is renewed once', async () => {
    const llm = await startFakeLLM([
      { status: 401, errorBody: { error: { message: 'token expired' } } },
      { text: 'Hi' },
    ]);
    try {
      const { env } = await fakeGitHub(`${llm.url}/v1`);
      const dir = await authDir();
      await new TokenStore(dir).write('github-copilot.json', { access: 'gho_token' });
      const resolved = resolveProvider({ model: 'github-copilot/gpt-4.1', provider: 'auto', providers: {}, env: {} });
      const provider = createProvider(resolved as ResolvedProvider, {
        oauth: { authDir: dir, env },
        retryDelaysMs: [],
      });
      const stream = provider.stream({
        model: 'github-copilot/gpt-4.1',
        messages: [{ role: 'user', content: 'hi' }],
        maxTokens: 50,
      });
      const response = await stream.result();
      expect(response.content).toBe('Hi');
      expect(llm.requests.map((r) => r.headers.authorization)).toEqual(['Bearer copilot-1', 'Bearer copilot-2']);
      expect(llm.requests[1]?.headers['editor-version']).toBe('vscode/1.99.0');
      expect(llm.requests[1]?.body.model).toBe('gpt-4.1');
    } finally {
      await llm.close();
    }
  });

  it('a request without a sign-in fails as an auth error that says how to sign in', async () => {
    const resolved = resolveProvider({ model: 'github-copilot/gpt-4.1', provider: 'auto', providers: {}, env: {} });
    const provider = createProvider(resolved as ResolvedProvider, { oauth: { authDir: await authDir(), env: {} } });
    const response = await provider.stream({ model: 'gpt-4.1', messages: [], maxTokens: 5 }).result();
    expect(response.error?.kind).toBe('auth');
    expect(response.error?.message).toContain('nanobot provider login github-copilot');
  });
});

/** A fake OpenAI auth server; the token endpoint checks the PKCE verifier against the challenge it was sent. */
async function fakeOpenAIAuth() {
  let challenge = '';
  web = await startFakeWeb({
    routes: {
      '/oauth/token': (request) => {
        const body = form(request.body);
        if (body.grant_type === 'refresh_token') {
          return json({ access_token: fakeJwt('acct_7'), refresh_token: 'rt-2', expires_in: 3600 });
        }
        const verified =
          createHash('sha256')
            .update(body.code_verifier ?? '')
            .digest('base64url') === challenge;
        if (!verified || body.code !== 'auth-code') return json({ error: 'invalid_grant' }, 400);
        return json({ access_token: fakeJwt('acct_7'), refresh_token: 'rt-1', expires_in: 3600 });
      },
    },
  });
  const env = {
    NANOBOT_OPENAI_CODEX_AUTHORIZE_URL: web.url('/oauth/authorize'),
    NANOBOT_OPENAI_CODEX_TOKEN_URL: web.url('/oauth/token'),
    NANOBOT_OPENAI_CODEX_CALLBACK_PORT: '0',
  };
  /** Reads the authorize URL the login printed: remembers its challenge, returns state and redirect. */
  const opened = (url: string) => {
    const parsed = new URL(url);
    challenge = parsed.searchParams.get('code_challenge') ?? '';
    expect(parsed.searchParams.get('code_challenge_method')).toBe('S256');
    return { state: parsed.searchParams.get('state') ?? '', redirect: parsed.searchParams.get('redirect_uri') ?? '' };
  };
  return { env, opened };
}

/** Lines to paste, released one by one when the test says so. */
function pasteQueue() {
  const lines: string[] = [];
  let wake: (() => void) | undefined;
  return {
    push(line: string) {
      lines.push(line);
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        const line = lines.shift();
        if (line !== undefined) yield line;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
}

describe('OpenAI Codex sign-in (PKCE)', () => {
  it('completes when the browser comes back to the local callback server', async () => {
    const { env, opened } = await fakeOpenAIAuth();
    const store = new TokenStore(await authDir());
    const statuses: number[] = [];
    const token = await loginOpenAICodex(store, env, {
      print: () => {},
      openBrowser: (url) => {
        const { state, redirect } = opened(url);
        void (async () => {
          statuses.push((await fetch(`${redirect}?code=auth-code&state=someone-else`)).status);
          statuses.push((await fetch(`${redirect}?code=auth-code&state=${state}`)).status);
        })();
      },
    });
    expect(statuses).toEqual([400, 200]);
    expect(token).toMatchObject({ access: expect.any(String), refresh: 'rt-1', accountId: 'acct_7' });
    expect(await mode(store.pathOf('openai-codex.json'))).toBe(0o600);
  });

  it('accepts the redirect address pasted back on a headless machine, ignoring one from another attempt', async () => {
    const { env, opened } = await fakeOpenAIAuth();
    const store = new TokenStore(await authDir());
    const paste = pasteQueue();
    const printed: string[] = [];
    const login = loginOpenAICodex(store, env, {
      input: paste,
      print: (line) => {
        printed.push(line);
        const url = line.trim();
        if (!url.startsWith('http') || !url.includes('/oauth/authorize')) return;
        const { state, redirect } = opened(url);
        paste.push('not a code at all');
        paste.push(`${redirect}?code=auth-code&state=stale`);
        paste.push(`${redirect}?code=auth-code&state=${state}`);
      },
    });
    expect((await login).accountId).toBe('acct_7');
    expect(printed).toContain('That address belongs to another sign-in; paste the one from this attempt.');
  });

  it('accepts a bare pasted code', async () => {
    expect(parsePasted('  auth-code ')).toEqual({ code: 'auth-code' });
    expect(parsePasted('code=abc&state=xyz')).toEqual({ code: 'abc', state: 'xyz' });
    expect(parsePasted('http://localhost:1455/auth/callback?error=access_denied')).toEqual({ error: 'access_denied' });
    const { env, opened } = await fakeOpenAIAuth();
    const paste = pasteQueue();
    const token = await loginOpenAICodex(new TokenStore(await authDir()), env, {
      input: paste,
      print: (line) => {
        if (line.trim().includes('/oauth/authorize')) {
          opened(line.trim());
          paste.push('auth-code');
        }
      },
    });
    expect(token.refresh).toBe('rt-1');
  });

  it('refreshes the access token before it expires and keeps the new one', async () => {
    const { env } = await fakeOpenAIAuth();
    const store = new TokenStore(await authDir());
    const now = Date.now();
    await store.write('openai-codex.json', {
      access: 'old',
      refresh: 'rt-1',
      expiresAt: now + 60_000,
      accountId: 'acct_7',
    });
    const credentials = new CodexCredentials(store, env, fetch, () => now);
    const fresh = await credentials.get();
    expect(fresh.apiKey).not.toBe('old');
    expect(fresh.headers).toMatchObject({ 'chatgpt-account-id': 'acct_7', originator: 'nanobot' });
    const saved = await store.read('openai-codex.json');
    expect(saved).toMatchObject({ refresh: 'rt-2', accountId: 'acct_7' });
    expect(saved?.expiresAt).toBe(now + 3_600_000);
    expect(form(web?.requests.at(-1)?.body ?? '')).toMatchObject({
      grant_type: 'refresh_token',
      refresh_token: 'rt-1',
    });
    expect((await credentials.get()).apiKey).toBe(fresh.apiKey); // not expiring: no second refresh
    expect(web?.requests).toHaveLength(1);
  });
});

describe('OpenAI Codex requests', () => {
  it('go to the Codex Responses endpoint with the access token and the ChatGPT account header', async () => {
    const dir = await authDir();
    const access = fakeJwt('acct_9');
    await new TokenStore(dir).write('openai-codex.json', { access, refresh: 'rt', accountId: 'acct_9' });
    const seen: { url: string; headers: Headers }[] = [];
    const recordingFetch = (async (input: string | URL | Request, init?: RequestInit) => {
      seen.push({ url: String(input instanceof Request ? input.url : input), headers: new Headers(init?.headers) });
      return new Response(JSON.stringify({ error: { message: 'stop here' } }), { status: 400 });
    }) as typeof fetch;
    const resolved = resolveProvider({ model: 'openai-codex/gpt-5.1-codex', provider: 'auto', providers: {}, env: {} });
    const provider = createProvider(resolved as ResolvedProvider, {
      oauth: { authDir: dir, env: {} },
      fetch: recordingFetch,
      retryDelaysMs: [],
    });
    await provider
      .stream({ model: 'openai-codex/gpt-5.1-codex', messages: [{ role: 'user', content: 'hi' }], maxTokens: 9 })
      .result();
    expect(seen[0]?.url).toBe('https://chatgpt.com/backend-api/codex/responses');
    expect(seen[0]?.headers.get('authorization')).toBe(`Bearer ${access}`);
    expect(seen[0]?.headers.get('chatgpt-account-id')).toBe('acct_9');
    expect(seen[0]?.headers.get('originator')).toBe('nanobot');
  });
});

describe('token files and JWT claims are checked, not cast', () => {
  it('names a damaged token file and what is wrong, and reads it as not signed in', async () => {
    const dir = await authDir();
    await mkdir(dir, { recursive: true });
    const problems: string[] = [];
    const store = new TokenStore(dir, (p) => problems.push(p));
    const bad = { 'a.json': '{"access":', 'b.json': '{"refresh":"r"}', 'c.json': '{"access":42}', 'd.json': '"x"' };
    for (const [file, text] of Object.entries(bad)) {
      await writeFile(join(dir, file), text);
      expect(await store.read(file)).toBeUndefined();
    }
    expect(await store.read('missing.json')).toBeUndefined();
    expect(problems).toHaveLength(4);
    expect(problems[0]).toMatch(new RegExp(`^token file ${join(dir, 'a.json')} is not valid JSON: .*not signed in`));
    expect(problems[1]).toMatch(/b\.json has the wrong shape: access: .*expected string, received undefined/);
    expect(problems[2]).toMatch(/c\.json has the wrong shape: access: .*expected string, received number/);
    expect(problems[3]).toMatch(/d\.json has the wrong shape: .*expected object/);
    await writeFile(join(dir, 'ok.json'), JSON.stringify({ access: 'tok', refresh: 7, expiresAt: 5 }));
    expect(await store.read('ok.json')).toEqual({ access: 'tok', expiresAt: 5 });
  });

  it('takes the ChatGPT account id only from a well-formed claim', () => {
    const jwt = (claims: unknown) => `h.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.s`;
    const claim = 'https://api.openai.com/auth';
    expect(accountIdOf(jwt({ [claim]: { chatgpt_account_id: 'acc-1' } }))).toBe('acc-1');
    for (const claims of [{}, { [claim]: 'x' }, { [claim]: { chatgpt_account_id: 3 } }, [1], null]) {
      expect(accountIdOf(jwt(claims))).toBeUndefined();
    }
    expect(accountIdOf('h.@@@.s')).toBeUndefined();
    expect(accountIdOf(undefined)).toBeUndefined();
  });
});
