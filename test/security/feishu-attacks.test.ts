/**
 * Hostile inputs to the Feishu QR login and to several bots: a registration server (or a man in the middle) that
 * points the login URL at a foreign host, redirects the registration elsewhere, or sends credentials that are not an
 * App ID and secret; instance ids with path tricks in config.json, on the command line and from the WebUI.
 */

import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { feishuInstances } from '../../src/channels/feishu/instances.js';
import { accountsRoot, register, safeLoginUrl, saveRegistration } from '../../src/channels/feishu/login.js';
import { resolveChannel, runtimeBlocks } from '../../src/channels/registry.js';
import { ConfigSchema } from '../../src/config/schema.js';
import { silentLogger } from '../../src/util/log.js';
import { type FakeFeishu, startFakeFeishu } from '../channels/feishu/fake-open-platform.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function fake(): Promise<FakeFeishu> {
  const started = await startFakeFeishu();
  closers.push(() => started.close());
  return started;
}

async function server(handler: http.RequestListener): Promise<{ url: string; hits: string[] }> {
  const hits: string[] = [];
  const s = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => s.close(() => resolve())));
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, hits };
}

function context() {
  const codes: string[] = [];
  const out: string[] = [];
  return {
    codes,
    out,
    ctx: {
      name: 'feishu',
      dataDir: mkdtempSync(join(tmpdir(), 'nb-feishu-attack-')),
      log: silentLogger,
      out: (text: string) => out.push(text),
      qr: (content: string) => codes.push(content),
    },
  };
}

describe('a hostile registration answer', () => {
  it('a login URL on a foreign host is never shown, and the login stops before polling', async () => {
    const platform = await fake();
    platform.registration.override('begin', { verification_uri_complete: 'https://evil.example/feishu/login?x=1' });
    const { ctx, codes } = context();
    await expect(register(platform.url, ctx, { pollIntervalMs: 10 })).rejects.toThrow(/outside Feishu and Lark/);
    expect(codes).toEqual([]);
    expect(platform.registration.requests.map((r) => r.action)).toEqual(['init', 'begin']);
  });

  it('only https on Feishu’s and Lark’s own domains (or the accounts server itself) counts as a login URL', () => {
    const root = accountsRoot('feishu');
    for (const ok of [
      'https://accounts.feishu.cn/oauth/v1/device/verify?user_code=AB',
      'https://open.feishu.cn/page/agent?user_code=AB',
      'https://accounts.larksuite.com/x',
    ]) {
      expect(safeLoginUrl(ok, root)).toBe(ok);
    }
    for (const bad of [
      'http://accounts.feishu.cn/x',
      'https://accounts.feishu.cn.evil.example/x',
      'https://evilfeishu.cn/x',
      'https://feishu.cn@evil.example/x',
      'https://user:pw@accounts.feishu.cn/x',
      'javascript:alert(1)',
      'https://accounts.feishu.cn/x y',
      `https://accounts.feishu.cn/${'a'.repeat(5000)}`,
      42,
    ]) {
      expect(safeLoginUrl(bad, root)).toBeUndefined();
    }
    // A self-hosted accounts server: its own origin only.
    expect(safeLoginUrl('http://127.0.0.1:9/v?c=1', 'http://127.0.0.1:9')).toBe('http://127.0.0.1:9/v?c=1');
    expect(safeLoginUrl('http://127.0.0.1:10/v', 'http://127.0.0.1:9')).toBeUndefined();
  });

  it('a registration redirected to another host is not followed (the foreign host hears nothing)', async () => {
    const foreign = await server((_req, res) => res.writeHead(200).end('{"supported_auth_methods":["client_secret"]}'));
    const redirecting = await server((_req, res) =>
      res.writeHead(307, { location: `${foreign.url}/oauth/v1/app/registration` }).end(),
    );
    await expect(register(redirecting.url, context().ctx, { pollIntervalMs: 10 })).rejects.toThrow(
      /Unable to start the Feishu \/ Lark login/,
    );
    expect(foreign.hits).toEqual([]);
  });

  it('credentials that are not an App ID and a secret are refused and nothing is saved', async () => {
    for (const poll of [
      { client_id: '../../etc/passwd', client_secret: 'Secret12345678' },
      { client_id: 'cli_a1b2c3d4e5f60718\nX', client_secret: 'Secret12345678' },
      { client_id: 'cli_a1b2c3d4e5f60718', client_secret: 'has space inside' },
      { client_id: 'cli_a1b2c3d4e5f60718', client_secret: { $ne: 1 } },
      { client_id: 'cli_a1b2c3d4e5f60718' },
    ]) {
      const platform = await fake();
      platform.registration.override('poll', poll);
      await expect(register(platform.url, context().ctx, { pollIntervalMs: 10 })).rejects.toThrow(
        /not an App ID and App Secret/,
      );
    }
  });

  it('a tenant brand other than lark changes nothing; a server without client_secret apps is refused', async () => {
    const platform = await fake();
    platform.registration.override('poll', {
      client_id: 'cli_a1b2c3d4e5f60718',
      client_secret: 'Secret12345678',
      user_info: { tenant_brand: 'https://evil.example' },
    });
    expect((await register(platform.url, context().ctx, { pollIntervalMs: 10 })).brand).toBe('feishu');
    const other = await fake();
    other.registration.override('init', { supported_auth_methods: ['none'] });
    await expect(register(other.url, context().ctx)).rejects.toThrow(/does not offer client_secret/);
  });

  it('a domain that would send the secret over plain http to another machine is refused before any request', () => {
    expect(() => accountsRoot('http://accounts.example.com')).toThrow(/https/);
  });
});

describe('instance ids with path tricks', () => {
  const tricks = ['../../etc', '..', 'a/b', 'a\\b', 'x.y', '%2e%2e', ' ', 'o\nk', '\u0000', 'a'.repeat(65)];

  it('config.json: every one is skipped, so no runtime channel, media dir or pairing key carries it', () => {
    const config = ConfigSchema.parse({
      channels: {
        feishu: {
          instances: tricks.map((id, i) => ({
            id,
            enabled: true,
            appId: `cli_${String(i).padStart(16, '0')}`,
            appSecret: 's',
          })),
        },
      },
    });
    const names = Object.keys(runtimeBlocks(config)).filter((name) => name.startsWith('feishu'));
    expect(names).toEqual([]);
    expect(feishuInstances.list(config.channels.feishu).skipped).toHaveLength(tricks.length);
  });

  it('runtime names (CLI, cron targets): nothing but feishu.<[A-Za-z0-9_-]{1,64}> resolves', () => {
    for (const id of tricks) expect(resolveChannel(`feishu.${id}`)).toBeUndefined();
    expect(resolveChannel('feishu.default')).toBeUndefined();
    expect(resolveChannel('telegram.second')).toBeUndefined();
    expect(resolveChannel('feishu.sales')).toMatchObject({ instance: 'sales' });
  });

  it('saving a login for one is refused', () => {
    const raw = { channels: { feishu: {} } };
    const result = { appId: 'cli_a1b2c3d4e5f60718', appSecret: 'Secret12345678', brand: 'feishu' as const };
    for (const id of tricks) expect(() => saveRegistration(raw, id, result)).toThrow(/invalid Feishu instance id/);
    expect(raw).toEqual({ channels: { feishu: {} } });
  });
});
