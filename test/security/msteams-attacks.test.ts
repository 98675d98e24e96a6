/**
 * Attacks on the Teams channel. Its messaging endpoint is on the network and anyone can post to it, so every
 * activity must prove with Bot Framework's signature that it is one: unsigned, wrongly signed, expired, foreign
 * audience or issuer, `alg: none`, a key Bot Framework does not list, a key endorsed for another channel, a reply
 * address (serviceUrl) the token does not carry, an oversized body. None gets a turn. Then the addresses a verified
 * activity or the model hands over: the bot's token goes only to trusted Teams hosts, never through a redirect, a
 * file name cannot leave the media folder, a planted reference or a model-chosen chat reaches nobody, and neither the
 * client secret nor any token appears in the logs.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { SignJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { msteamsChannel } from '../../src/channels/msteams/index.js';
import { referencesPath } from '../../src/channels/msteams/references.js';
import { DEFAULT_TRUSTED_SERVICE_URL_HOSTS, isTrustedServiceUrl } from '../../src/channels/msteams/trust.js';
import { createLogger } from '../../src/util/log.js';
import { eventually } from '../channels/contract.js';
import { ISSUER } from '../channels/msteams/fake-teams.js';
import {
  dm,
  lastUserText,
  OWNER_DM,
  quiet,
  restartGateway,
  shown,
  startTeamsGateway,
  type TeamsGateway,
  waitState,
} from '../channels/msteams/helpers.js';

const open: TeamsGateway[] = [];
const servers: http.Server[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function start(settings: Record<string, unknown> = {}) {
  const lines: string[] = [];
  const run = await startTeamsGateway(
    settings,
    {},
    createLogger('debug', (line) => lines.push(line)),
  );
  open.push(run);
  await waitState(run.gateway, 'running');
  return { run, lines };
}

/** A server that records whoever reaches it (where a stolen token or a forged reply would go). */
async function trap(): Promise<{ url: string; hits: string[] }> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"x"}');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('msteams settings: what decides trust cannot be pointed somewhere unsafe', () => {
  const base = { enabled: true, appId: 'app', appPassword: 'secret' };
  it.each([
    ['openIdMetadataUrl', 'http://login.example.com/openid'],
    ['openIdMetadataUrl', 'file:///etc/passwd'],
    ['openIdMetadataUrl', 'http://10.0.0.5/openid'],
    ['tokenUrl', 'http://login.example.com/token'],
    ['tokenUrl', 'javascript:alert(1)'],
  ])('refuses %s = %s', (key, value) => {
    expect(() => msteamsChannel.parse({ ...base, [key]: value })).toThrow(new RegExp(`channels\\.msteams\\.${key}`));
  });
  it.each([['*'], ['*.com'], ['evil host'], ['https://x.example'], ['']])(
    'refuses trustedServiceUrlHosts %j',
    (host) => {
      expect(() => msteamsChannel.parse({ ...base, trustedServiceUrlHosts: [host] })).toThrow(/trustedServiceUrlHosts/);
    },
  );
  it('refuses to run without the token check (validateInboundAuth: false)', () => {
    expect(() => msteamsChannel.parse({ ...base, validateInboundAuth: false })).toThrow(/validateInboundAuth/);
  });
  it('accepts loopback fakes and https sovereign clouds', () => {
    expect(() =>
      msteamsChannel.parse({
        ...base,
        openIdMetadataUrl: 'https://login.botframework.azure.us/v1/.well-known/openidconfiguration',
        tokenUrl: 'http://127.0.0.1:9/token',
        trustedServiceUrlHosts: ['*.botframework.us', '127.0.0.1', '127.0.0.1:3979', '[::1]:3979'],
      }),
    ).not.toThrow();
  });
});

describe('msteams trustedServiceUrlHosts: where the bot’s token may go', () => {
  const trusted = [...DEFAULT_TRUSTED_SERVICE_URL_HOSTS, '127.0.0.1:3979'];
  it.each([
    'https://smba.trafficmanager.net/amer/',
    'https://smba.trafficmanager.net:8443/emea/',
    'https://europe.webchat.botframework.com/',
    'https://SMBA.TrafficManager.NET./amer/',
    'http://127.0.0.1:3979/svc/',
  ])('trusts %s', (url) => expect(isTrustedServiceUrl(url, trusted)).toBe(true));
  it.each([
    'http://smba.trafficmanager.net/amer/',
    'https://smba.trafficmanager.net.evil.example/',
    'https://evilsmba.trafficmanager.net/',
    'https://botframework.com/',
    'https://x.botframework.com.evil.example/',
    'https://evilbotframework.com/',
    'https://user:pw@smba.trafficmanager.net/',
    'http://127.0.0.1:3980/',
    'http://localhost:3979/',
    'http://127.0.0.2:3979/',
    'http://[::1]:3979/',
    'ftp://smba.trafficmanager.net/',
    'not a url',
  ])('does not trust %s', (url) => expect(isTrustedServiceUrl(url, trusted)).toBe(false));
});

describe('msteams endpoint: only activities Bot Framework signed get a turn', () => {
  it('refuses every forged or broken token with 401, and no turn runs', async () => {
    const { run, lines } = await start();
    const { teams } = run;
    const activity = teams.activityFor(dm('let me in'));
    const now = Math.floor(Date.now() / 1000);
    const stranger = await teams.strangerKey();
    const webchatOnly = await teams.addKey('webchat-key', ['webchat']);
    const cases: [string, Record<string, string>][] = [
      ['no Authorization header', {}],
      ['a Basic credential', { authorization: 'Basic dXNlcjpwYXNz' }],
      ['a bearer that is no JWT', { authorization: 'Bearer not-a-jwt' }],
      [
        'alg none (unsigned)',
        {
          authorization: `Bearer ${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ iss: ISSUER, aud: teams.appId, serviceurl: teams.serviceUrl, exp: now + 600 })}.`,
        },
      ],
      [
        'HS256 keyed with the public key (algorithm confusion)',
        {
          authorization: `Bearer ${await new SignJWT({ iss: ISSUER, aud: teams.appId, serviceurl: teams.serviceUrl })
            .setProtectedHeader({ alg: 'HS256', kid: 'fake-key-1' })
            .setExpirationTime('10m')
            .sign(new TextEncoder().encode(JSON.stringify(await (await fetch(`${teams.url}/keys`)).json())))}`,
        },
      ],
      [
        'signed by a key not in the JWKS, under a listed kid',
        { authorization: `Bearer ${await teams.sign({}, { key: stranger })}` },
      ],
      [
        'signed by an unknown key id',
        { authorization: `Bearer ${await teams.sign({}, { key: stranger, kid: 'rogue' })}` },
      ],
      ['for another bot (aud)', { authorization: `Bearer ${await teams.sign({ aud: 'another-app-id' })}` }],
      ['from another issuer', { authorization: `Bearer ${await teams.sign({ iss: 'https://evil.example' })}` }],
      [
        'expired (beyond the 5 minutes of skew)',
        { authorization: `Bearer ${await teams.sign({ exp: now - 600, nbf: now - 4000 })}` },
      ],
      ['not valid yet', { authorization: `Bearer ${await teams.sign({ nbf: now + 3600 })}` }],
      ['without an expiry', { authorization: `Bearer ${await teams.sign({ exp: undefined })}` }],
      ['without a serviceurl claim', { authorization: `Bearer ${await teams.sign({ serviceurl: undefined })}` }],
      [
        'a key endorsed for webchat only',
        { authorization: `Bearer ${await teams.sign({}, { key: webchatOnly, kid: 'webchat-key' })}` },
      ],
      ['an overlong bearer', { authorization: `Bearer ${'a'.repeat(10_000)}` }],
    ];
    for (const [what, headers] of cases) {
      const { status } = await teams.post(activity, headers);
      expect(status, what).toBe(401);
    }
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
    expect(teams.posted()).toEqual([]);
    // A burst of refusals is logged in a line or two, not one per request.
    expect(lines.filter((line) => line.includes('refused an activity')).length).toBeLessThanOrEqual(3);
  });

  it('refuses a reply address the token does not carry (a forged serviceUrl), and sends nothing there', async () => {
    const { run } = await start();
    const evil = await trap();
    const forged = { ...run.teams.activityFor(dm('reply over there')), serviceUrl: `${evil.url}/` };
    expect((await run.teams.post(forged, { authorization: `Bearer ${await run.teams.sign()}` })).status).toBe(401);
    // A serviceUrl the token does carry, on a host that is not trusted: accepted (200, Bot Framework signed it),
    // but no turn and no request with the bot's token.
    const untrusted = { ...run.teams.activityFor(dm('still no')), serviceUrl: 'https://evil.example/' };
    const signed = await run.teams.sign({ serviceurl: 'https://evil.example/' });
    expect((await run.teams.post(untrusted, { authorization: `Bearer ${signed}` })).status).toBe(200);
    await quiet();
    expect(evil.hits).toEqual([]);
    expect(run.llm.requests).toHaveLength(0);
  });

  it('does not let forged key ids make it fetch Bot Framework’s keys over and over', async () => {
    const { run } = await start();
    const stranger = await run.teams.strangerKey();
    const before = run.teams.stats.jwksFetches;
    for (let i = 0; i < 20; i++) {
      const token = await run.teams.sign({}, { key: stranger, kid: `rogue-${i}` });
      await run.teams.post(run.teams.activityFor(dm('x')), { authorization: `Bearer ${token}` });
    }
    expect(run.teams.stats.jwksFetches - before).toBeLessThanOrEqual(1);
  });

  it('refuses an oversized body (413), a wrong path (404), GET (405) and a body that is not JSON (400)', async () => {
    const { run } = await start();
    const authorization = `Bearer ${await run.teams.sign()}`;
    const huge = { ...run.teams.activityFor(dm('x')), text: 'y'.repeat(300_000) };
    expect((await run.teams.post(huge, { authorization })).status).toBe(413);
    expect((await run.teams.post('{not json', { authorization })).status).toBe(400);
    const root = `http://127.0.0.1:${run.port}`;
    expect((await fetch(`${root}/api/other`, { method: 'POST', headers: { authorization } })).status).toBe(404);
    expect((await fetch(`${root}/api/messages`, { headers: { authorization } })).status).toBe(405);
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
  });
});

describe('msteams: addresses from activities and from the model', () => {
  it('sends the bot’s token only to trusted hosts and never through a redirect; names cannot leave the media folder', async () => {
    const { run } = await start({ maxMediaMb: 0.01 });
    const evil = await trap();
    const redirect = run.teams.serveRedirect('moved.png', `${evil.url}/stolen`);
    const big = run.teams.serveFile('big.bin', Buffer.alloc(64 * 1024, 1));
    const note = run.teams.serveFile('note.txt', Buffer.from('plain note'));
    run.llm.enqueue({ text: 'checked' });
    await run.teams.userSays(
      dm('files', {
        attachments: [
          // localhost is loopback, but the trusted list names 127.0.0.1:<the fake's port> only.
          { contentType: 'image/png', contentUrl: `http://localhost:${new URL(run.teams.url).port}/svc/files/x.png` },
          { contentType: 'image/png', contentUrl: `${evil.url}/img.png` },
          { contentType: 'image/png', contentUrl: redirect },
          {
            contentType: 'application/vnd.microsoft.teams.file.download.info',
            name: 'meta.txt',
            content: { downloadUrl: 'http://169.254.169.254/latest/meta-data/' },
          },
          {
            contentType: 'application/vnd.microsoft.teams.file.download.info',
            name: 'big.bin',
            content: { downloadUrl: big.shareUrl },
          },
          {
            contentType: 'application/vnd.microsoft.teams.file.download.info',
            name: '../../../.bashrc',
            content: { downloadUrl: note.shareUrl },
          },
        ],
      }),
    );
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['checked']));
    expect(evil.hits).toEqual([]);
    const sent = lastUserText(run);
    expect(sent).toContain('not received');
    expect(sent).toContain('too large');
    const mediaDir = join(run.files.dataDir, 'media', 'msteams');
    const saved = readdirSync(mediaDir);
    expect(saved).toHaveLength(1);
    expect(saved[0]).toMatch(/bashrc$/);
    expect(saved[0]).not.toMatch(/^\./);
  });

  it('reaches no one through a chat id the model makes up or a reference planted on disk', async () => {
    const { run } = await start();
    const evil = await trap();
    const path = referencesPath(run.files.dataDir);
    mkdirSync(dirname(path), { recursive: true });
    const planted = (id: string, serviceUrl: string) => ({
      serviceUrl,
      conversationId: id,
      conversationType: 'personal',
      updatedAt: Date.now(),
    });
    writeFileSync(
      path,
      JSON.stringify({
        version: 1,
        conversations: {
          'a:planted-https': planted('a:planted-https', 'https://evil.example/'),
          'a:planted-loopback': planted('a:planted-loopback', 'http://localhost:1/'),
          'a:planted-old': { ...planted('a:planted-old', run.teams.serviceUrl), updatedAt: 0 },
        },
      }),
    );
    await restartGateway(run);
    await waitState(run.gateway, 'running');
    for (const chatId of ['a:planted-https', 'a:planted-loopback', 'a:planted-old', 'a:made-up']) {
      run.gateway.bus.publishOutbound({
        channel: 'msteams',
        chatId,
        content: 'exfiltrate',
        metadata: { serviceUrl: `${evil.url}/`, service_url: `${evil.url}/` },
      });
    }
    await quiet();
    expect(evil.hits).toEqual([]);
    expect(run.teams.posted()).toEqual([]);
  });

  it('escapes markup the model writes (no raw HTML, no fake mentions), and keeps secrets out of the logs', async () => {
    const { run, lines } = await start();
    run.llm.enqueue({ text: '<img src=x onerror=alert(1)> <at>Everyone</at> & done' });
    await run.teams.userSays(dm('hi'));
    await eventually(() => expect(run.teams.messagesIn(OWNER_DM)).toHaveLength(1));
    const text = run.teams.messagesIn(OWNER_DM)[0]?.text ?? '';
    expect(text).not.toMatch(/<img|<at>/);
    expect(text).toContain('&lt;img');
    const bearer = (run.teams.messagesIn(OWNER_DM)[0]?.authorization ?? '').replace(/^Bearer /, '');
    expect(bearer).not.toBe('');
    const log = lines.join('\n');
    expect(log).not.toContain(run.teams.appPassword);
    expect(log).not.toContain(bearer);
    expect(log).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./);
  });
});
