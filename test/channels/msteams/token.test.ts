/**
 * The bot's own token (client credentials) with an injected clock: kept until shortly before it expires, one
 * request for concurrent callers, dropped when refused, rejected credentials as a UserError that names the keys.
 * And the connector client against the fake: a refused token is fetched again, throttling and 5xx are retried,
 * other refusals are not, an untrusted serviceUrl gets no request at all.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectorClient } from '../../../src/channels/msteams/connector.js';
import { msteamsChannel } from '../../../src/channels/msteams/index.js';
import { AppTokenSource, CredentialsRejected } from '../../../src/channels/msteams/token.js';
import { silentLogger } from '../../../src/util/log.js';
import { type FakeTeams, ISSUER, startFakeTeams } from './fake-teams.js';

interface Call {
  url: string;
  body: string;
}

/** A fetch that answers each token request with the next scripted reply and records what was asked. */
function scriptedFetch(replies: (() => Response)[]): { fetch: typeof fetch; calls: Call[] } {
  const calls: Call[] = [];
  const fetcher = (async (url: string | URL | Request, init?: RequestInit) => {
    calls.push({ url: String(url), body: String(init?.body ?? '') });
    const next = replies.shift();
    if (!next) throw new TypeError('fetch failed');
    return next();
  }) as typeof fetch;
  return { fetch: fetcher, calls };
}

const tokenReply =
  (token: string, expiresIn = 3600) =>
  () =>
    new Response(JSON.stringify({ token_type: 'Bearer', expires_in: expiresIn, access_token: token }), { status: 200 });

function source(fetcher: typeof fetch, clock: { now: number }) {
  return new AppTokenSource({
    tokenUrl: 'https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token',
    appId: 'app-id',
    appPassword: 'app-secret',
    scope: `${ISSUER}/.default`,
    fetch: fetcher,
    now: () => clock.now,
  });
}

describe('msteams app token', () => {
  it('asks with client credentials, keeps the token until five minutes before it expires, then fetches anew', async () => {
    const clock = { now: 1_000_000 };
    const { fetch, calls } = scriptedFetch([tokenReply('first'), tokenReply('second')]);
    const tokens = source(fetch, clock);
    expect(await tokens.token()).toBe('first');
    const form = new URLSearchParams(calls[0]?.body);
    expect(Object.fromEntries(form)).toEqual({
      grant_type: 'client_credentials',
      client_id: 'app-id',
      client_secret: 'app-secret',
      scope: 'https://api.botframework.com/.default',
    });
    clock.now += 54 * 60_000;
    expect(await tokens.token()).toBe('first');
    expect(calls).toHaveLength(1);
    clock.now += 2 * 60_000;
    expect(await tokens.token()).toBe('second');
    expect(calls).toHaveLength(2);
  });

  it('refreshes a short-lived token halfway through its life', async () => {
    const clock = { now: 0 };
    const { fetch, calls } = scriptedFetch([tokenReply('short', 120), tokenReply('next', 120)]);
    const tokens = source(fetch, clock);
    await tokens.token();
    clock.now = 59_000;
    expect(await tokens.token()).toBe('short');
    clock.now = 60_000;
    expect(await tokens.token()).toBe('next');
    expect(calls).toHaveLength(2);
  });

  it('makes one request for concurrent callers, and a new one after the token is refused', async () => {
    const clock = { now: 0 };
    const { fetch, calls } = scriptedFetch([tokenReply('shared'), tokenReply('fresh')]);
    const tokens = source(fetch, clock);
    expect(await Promise.all([tokens.token(), tokens.token(), tokens.token()])).toEqual(['shared', 'shared', 'shared']);
    tokens.invalidate('some-other-token');
    expect(await tokens.token()).toBe('shared');
    tokens.invalidate('shared');
    expect(await tokens.token()).toBe('fresh');
    expect(calls).toHaveLength(2);
  });

  it('says which keys to check when Microsoft rejects the credentials, and keeps outages apart', async () => {
    const rejected = scriptedFetch([
      () =>
        new Response(
          JSON.stringify({
            error: 'invalid_client',
            error_description: 'AADSTS7000215: Invalid client secret provided.\r\nTrace ID: abc',
          }),
          { status: 401 },
        ),
    ]);
    const error = await source(rejected.fetch, { now: 0 })
      .token()
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(CredentialsRejected);
    expect((error as CredentialsRejected).message).toContain('AADSTS7000215: Invalid client secret provided.');
    expect((error as CredentialsRejected).message).not.toContain('Trace ID');
    expect((error as CredentialsRejected).hint).toContain('appPassword');

    const down = scriptedFetch([() => new Response('busy', { status: 503 })]);
    const outage = await source(down.fetch, { now: 0 })
      .token()
      .catch((err: unknown) => err);
    expect(outage).not.toBeInstanceOf(CredentialsRejected);
    expect(String(outage)).toContain('HTTP 503');
    const offline = await source(scriptedFetch([]).fetch, { now: 0 })
      .token()
      .catch((err: unknown) => err);
    expect(String(offline)).toContain('cannot reach Microsoft');
  });
});

describe('msteams connector client (against the fake Bot Framework)', () => {
  let teams: FakeTeams | undefined;
  afterEach(async () => {
    await teams?.close();
    teams = undefined;
  });

  async function client(fake: FakeTeams, trusted = [new URL(fake.url).host]) {
    const tokens = new AppTokenSource({
      tokenUrl: `${fake.url}/token`,
      appId: fake.appId,
      appPassword: fake.appPassword,
      scope: `${ISSUER}/.default`,
    });
    return new ConnectorClient({ tokens, trustedHosts: () => trusted, log: silentLogger });
  }
  const signal = () => new AbortController().signal;

  it('fetches a new token once when the connector refuses the current one', async () => {
    teams = await startFakeTeams();
    const connector = await client(teams);
    const address = { serviceUrl: teams.serviceUrl, conversationId: 'a:chat' };
    await connector.send(address, { type: 'message', text: 'one' }, { retry: false, signal: signal() });
    teams.revokeTokens();
    await connector.send(address, { type: 'message', text: 'two' }, { retry: false, signal: signal() });
    expect(teams.messagesIn('a:chat').map((activity) => activity.text)).toEqual(['one', 'two']);
    expect(teams.stats.tokenRequests).toBe(2);
  });

  it('retries throttling and server errors, not other refusals', async () => {
    teams = await startFakeTeams();
    const connector = await client(teams);
    const address = { serviceUrl: teams.serviceUrl, conversationId: 'a:chat' };
    teams.failNext(2, 429, 0);
    await connector.send(address, { type: 'message', text: 'after throttling' }, { retry: true, signal: signal() });
    teams.failNext(1, 502);
    await connector.send(address, { type: 'message', text: 'after a 502' }, { retry: true, signal: signal() });
    expect(teams.messagesIn('a:chat').map((activity) => activity.text)).toEqual(['after throttling', 'after a 502']);
    teams.failNext(1, 403);
    await expect(
      connector.send(address, { type: 'message', text: 'forbidden' }, { retry: true, signal: signal() }),
    ).rejects.toThrow(/HTTP 403 \(Throttled: failing with 403\)/);
    // Typing is tried once: a 500 is not waited out.
    teams.failNext(1, 500);
    await expect(connector.send(address, { type: 'typing' }, { retry: false, signal: signal() })).rejects.toThrow(
      /HTTP 500/,
    );
    expect(teams.posted().map((activity) => activity.text)).toEqual(['after throttling', 'after a 502']);
  });

  it('sends nothing, not even a token request, to an untrusted serviceUrl', async () => {
    teams = await startFakeTeams();
    const connector = await client(teams, ['smba.trafficmanager.net']);
    await expect(
      connector.send(
        { serviceUrl: teams.serviceUrl, conversationId: 'a:chat' },
        { type: 'message', text: 'x' },
        { retry: true, signal: signal() },
      ),
    ).rejects.toThrow(/not sending the bot's token/);
    expect(teams.stats.tokenRequests).toBe(0);
    expect(teams.posted()).toEqual([]);
  });
});

describe('msteams credentials check (the WebUI’s button)', () => {
  let teams: FakeTeams | undefined;
  afterEach(async () => {
    await teams?.close();
    teams = undefined;
  });

  it('passes with working credentials, fails with a wrong secret, warns when Microsoft is unreachable', async () => {
    teams = await startFakeTeams();
    const block = (extra: Record<string, unknown>) => ({
      enabled: true,
      appId: teams?.appId,
      appPassword: teams?.appPassword,
      tokenUrl: `${teams?.url}/token`,
      ...extra,
    });
    expect(await msteamsChannel.verify?.(block({}))).toMatchObject({
      status: 'pass',
      identity: { account: teams.appId },
    });
    const wrong = await msteamsChannel.verify?.(block({ appPassword: 'nope' }));
    expect(wrong).toMatchObject({ status: 'fail' });
    expect(wrong?.message).toContain('AADSTS7000215');
    expect(await msteamsChannel.verify?.(block({ tokenUrl: 'http://127.0.0.1:9/token' }))).toMatchObject({
      status: 'warn',
    });
  });
});
