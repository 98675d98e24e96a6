/**
 * The Feishu / Lark QR login (scan to create a bot) against the fake accounts server, and how its result and
 * several bots are kept in `channels.feishu` (upstream's shapes: a plain section, or `instances`).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { feishuChannel } from '../../../src/channels/feishu/index.js';
import { feishuInstances } from '../../../src/channels/feishu/instances.js';
import { feishuLogin, register, saveRegistration } from '../../../src/channels/feishu/login.js';
import { PairingStore } from '../../../src/channels/pairing.js';
import { runtimeBlocks } from '../../../src/channels/registry.js';
import { ConfigSchema } from '../../../src/config/schema.js';
import { silentLogger } from '../../../src/util/log.js';
import { APP, type FakeFeishu, startFakeFeishu } from './fake-open-platform.js';

const NEW_APP = { id: 'cli_00112233aabbccdd', secret: 'NewAppSecret0123456789abcdefABCD' };
const fakes: FakeFeishu[] = [];
afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

async function fake(): Promise<FakeFeishu> {
  const started = await startFakeFeishu({ app: NEW_APP });
  fakes.push(started);
  return started;
}

function context(overrides: Record<string, unknown> = {}) {
  const out: string[] = [];
  const codes: string[] = [];
  return {
    out,
    codes,
    ctx: {
      name: 'feishu',
      dataDir: mkdtempSync(join(tmpdir(), 'nb-feishu-login-')),
      log: silentLogger,
      out: (text: string) => out.push(text),
      qr: (content: string) => codes.push(content),
      ...overrides,
    },
  };
}

describe('feishu registration (scan to create)', () => {
  it('init → begin (QR shown) → pending polls → the new app once scanned', async () => {
    const server = await fake();
    const { ctx, codes } = context({
      qr: (content: string) => {
        codes.push(content);
        setTimeout(() => server.registration.scan(), 50);
      },
    });
    const result = await register(server.url, ctx, { pollIntervalMs: 20 });
    expect(result).toEqual({ appId: NEW_APP.id, appSecret: NEW_APP.secret, brand: 'feishu' });
    expect(codes).toEqual([`${server.url}/verification?user_code=UC1`]);
    const actions = server.registration.requests.map((r) => r.action);
    expect(actions.slice(0, 2)).toEqual(['init', 'begin']);
    expect(actions.slice(2).every((a) => a === 'poll')).toBe(true);
    expect(server.registration.requests[1]).toMatchObject({
      archetype: 'PersonalAgent',
      auth_method: 'client_secret',
      request_user_info: 'open_id',
    });
    expect(server.registration.requests.at(-1)).toMatchObject({ device_code: 'dc_1', tp: 'ob_app' });
  });

  it("takes Lark's brand from the answer, and a decline ends the login", async () => {
    const server = await fake();
    server.registration.scan(NEW_APP, 'lark');
    expect((await register(server.url, context().ctx, { pollIntervalMs: 10 })).brand).toBe('lark');
    const other = await fake();
    other.registration.decline();
    await expect(register(other.url, context().ctx, { pollIntervalMs: 10 })).rejects.toThrow(/declined/);
  });

  it('cancelling stops the polls', async () => {
    const server = await fake();
    const controller = new AbortController();
    const { ctx } = context({ signal: controller.signal, qr: () => setTimeout(() => controller.abort(), 30) });
    await expect(register(server.url, ctx, { pollIntervalMs: 10 })).rejects.toThrow(/cancelled/);
    const polls = server.registration.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.registration.requests.length).toBe(polls);
  });
});

describe('saving the new bot', () => {
  const result = { appId: NEW_APP.id, appSecret: NEW_APP.secret, brand: 'feishu' as const };

  it('a plain section stays plain for the default instance, enabled, with the identity key', () => {
    const raw: Record<string, unknown> = { channels: { feishu: { enabled: false, allowFrom: ['ou_me'] } } };
    expect(saveRegistration(raw, 'default', result)).toEqual({ instance: 'default', appChanged: false });
    expect((raw.channels as Record<string, unknown>).feishu).toEqual({
      enabled: true,
      allowFrom: ['ou_me'],
      appId: NEW_APP.id,
      appSecret: NEW_APP.secret,
      identityKey: `feishu:${NEW_APP.id}`,
      domain: 'feishu',
    });
  });

  it('another instance turns the section into upstream’s instances list, the old bot kept as default', () => {
    const raw: Record<string, unknown> = {
      channels: { feishu: { enabled: true, appId: APP.id, appSecret: APP.secret, allowFrom: ['ou_me'] } },
    };
    saveRegistration(raw, 'sales', result);
    const section = (raw.channels as Record<string, Record<string, unknown>>).feishu;
    expect(section).toEqual({
      instances: [
        {
          id: 'default',
          instanceId: 'default',
          enabled: true,
          appId: APP.id,
          appSecret: APP.secret,
          allowFrom: ['ou_me'],
        },
        {
          id: 'sales',
          instanceId: 'sales',
          name: 'nanobot sales',
          appId: NEW_APP.id,
          appSecret: NEW_APP.secret,
          identityKey: `feishu:${NEW_APP.id}`,
          enabled: true,
          domain: 'feishu',
        },
      ],
    });
    const config = ConfigSchema.parse({ channels: raw.channels });
    expect(Object.keys(runtimeBlocks(config)).filter((n) => n.startsWith('feishu'))).toEqual([
      'feishu',
      'feishu.sales',
    ]);
  });

  it('the same app scanned again updates the instance that has it; a new app empties allowFrom', () => {
    const raw: Record<string, unknown> = {
      channels: {
        feishu: {
          instances: [
            { id: 'default', appId: NEW_APP.id, appSecret: 'old', domain: 'feishu', allowFrom: ['ou_a'] },
            { id: 'ops', appId: APP.id, appSecret: 'x', domain: 'feishu', allowFrom: ['ou_b'] },
          ],
        },
      },
    };
    expect(saveRegistration(raw, 'brand-new', result)).toEqual({ instance: 'default', appChanged: false });
    const instances = (raw.channels as { feishu: { instances: Record<string, unknown>[] } }).feishu.instances;
    expect(instances).toHaveLength(2);
    expect(instances[0]).toMatchObject({ appSecret: NEW_APP.secret, allowFrom: ['ou_a'] });
    const other = { appId: 'cli_99999999aaaaaaaa', appSecret: 'AnotherSecret123', brand: 'feishu' as const };
    expect(saveRegistration(raw, 'ops', other)).toEqual({ instance: 'ops', appChanged: true });
    expect(instances[1]).toMatchObject({ appId: other.appId, allowFrom: [], identityKey: `feishu:${other.appId}` });
  });

  it('feishuLogin saves through updateConfig, and a new app forgets the old approvals', async () => {
    const server = await fake();
    server.registration.scan();
    const raw: Record<string, unknown> = {
      channels: { feishu: { enabled: true, appId: APP.id, appSecret: APP.secret, domain: server.url } },
    };
    const { ctx, out } = context({
      updateConfig: async (mutate: (tree: Record<string, unknown>) => void) => mutate(raw),
    });
    const pairing = new PairingStore({ dir: join(ctx.dataDir, 'pairing') });
    const { code } = await pairing.requestCode('feishu', { id: 'ou_old' }, 'oc_1');
    await pairing.approve(code);
    const settings = feishuChannel.schema.parse({ domain: server.url, appId: APP.id, appSecret: APP.secret });
    await feishuLogin(settings as never, ctx as never);
    expect(out.join('')).toMatch(/already has an App ID/);
    await feishuLogin(settings as never, { ...ctx, force: true } as never, { pollIntervalMs: 10 });
    expect((raw.channels as Record<string, Record<string, unknown>>).feishu).toMatchObject({
      appId: NEW_APP.id,
      domain: server.url,
      allowFrom: [],
    });
    expect(new PairingStore({ dir: join(ctx.dataDir, 'pairing') }).isApproved('feishu', 'ou_old')).toBe(false);
  });
});

describe('feishu instances', () => {
  it('lists upstream’s ids: default first, assistant-<n> after, shared keys under each', () => {
    const { instances, skipped } = feishuInstances.list({
      groupPolicy: 'open',
      instances: [{ appId: 'cli_a' }, { appId: 'cli_b', groupPolicy: 'mention' }, { instance_id: 'ops' }],
    });
    expect(skipped).toEqual([]);
    expect(instances.map((i) => [i.id, i.block.groupPolicy, i.block.appId])).toEqual([
      ['default', 'open', 'cli_a'],
      ['assistant-2', 'mention', 'cli_b'],
      ['ops', 'open', undefined],
    ]);
    // Ids and labels are not settings: a plain section and the same bot as `instances` read the same.
    const plain = { enabled: true, appId: 'cli_a', allowFrom: ['ou_1'] };
    expect(
      feishuInstances.list({ instances: [{ id: 'default', instanceId: 'default', name: 'x', ...plain }] }),
    ).toEqual(feishuInstances.list(plain));
  });

  it('skips ids with path tricks, repeated ids, non-objects, and a second enabled bot on the same app', () => {
    const { instances, skipped } = feishuInstances.list({
      instances: [
        { id: '../../etc', enabled: true },
        { id: 'a/b' },
        { id: 'x.y' },
        { id: '' },
        { id: 'a'.repeat(65) },
        'nope',
        { id: 'one', enabled: true, appId: APP.id },
        { id: 'one' },
        { id: 'two', enabled: true, appId: APP.id },
        { id: 'three', enabled: true, appId: APP.id, domain: 'lark' },
      ],
    });
    expect(instances.map((i) => i.id)).toEqual(['one', 'three']);
    expect(skipped).toHaveLength(8);
    expect(skipped.join('\n')).toMatch(/same app as instance "one"/);
    expect(() => feishuInstances.blockIn({}, '../x')).toThrow(/invalid/);
  });
});
