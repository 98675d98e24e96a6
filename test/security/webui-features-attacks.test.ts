/**
 * Hostile requests to Settings › Channels and the pairing queue (src/webui/settings-features.ts,
 * settings-pairing.ts), over the real WebSocket of a real gateway:
 *   - secrets saved through the form never come back (catalog, configure answer, validate answer, errors);
 *   - a form cannot write keys outside the channel's setup description (apiBase, enabled, prototype keys, another
 *     channel's keys…), so the validate call cannot be pointed at another host either;
 *   - channel names and pairing codes that are not ones (traversal, prototype names, oversize, wrong types);
 *   - wrong-typed and oversize values.
 * Every refusal is a 400/404 that leaves config.json byte for byte as it was.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PairingStore } from '../../src/channels/pairing.js';
import { type FakeBotApi, startFakeBotApi } from '../channels/telegram/fake-bot-api.js';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Answer {
  ok: boolean;
  result?: unknown;
  error?: { status: number; message: string };
}

async function setup(): Promise<{
  run: WebUiGateway;
  client: TestClient;
  api: FakeBotApi;
  decoy: FakeBotApi;
  configPath: string;
}> {
  const api = await startFakeBotApi();
  const decoy = await startFakeBotApi();
  cleanups.push(
    () => api.close(),
    () => decoy.close(),
  );
  const run = await startWebUiGateway([], {}, undefined, { telegram: { enabled: false, apiBase: api.url } });
  cleanups.push(() => run.close());
  const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  cleanups.push(() => client.close());
  await client.next((f) => f.event === 'ready');
  return { run, client, api, decoy, configPath: join(run.dataDir, 'config.json') };
}

let n = 0;
async function mutation(client: TestClient, action: string, payload: unknown): Promise<Answer> {
  const request_id = `a${++n}`;
  client.send({ type: 'webui_request', request_id, action, payload });
  return (await client.next(
    (f) => f.event === 'webui_response' && (f as { request_id?: string }).request_id === request_id,
  )) as unknown as Answer;
}

async function catalog(run: WebUiGateway): Promise<string> {
  const res = await fetch(`${run.url}/api/settings/nanobot-features`, {
    headers: { authorization: `Bearer ${run.token}` },
  });
  return res.text();
}

const SECRETS: [string, string, string][] = [
  ['telegram', 'token', '4242:TEST-TOKEN'],
  ['telegram', 'proxy', 'http://user:proxy-pass-5521@127.0.0.1:9'],
  ['slack', 'botToken', 'xoxb-slack-bot-secret-7788'],
  ['slack', 'appToken', 'xapp-slack-app-secret-9911'],
  ['discord', 'token', 'discord-bot-secret-token-4455'],
  ['feishu', 'appSecret', 'feishu-app-secret-3322'],
  ['matrix', 'password', 'matrix-password-secret-6677'],
  ['matrix', 'accessToken', 'syt_matrix_access_secret_1234'],
  ['email', 'imapPassword', 'imap-password-secret-8899'],
  ['email', 'smtpPassword', 'smtp-password-secret-1122'],
];

describe('channel settings attacks', () => {
  it('never sends a saved secret back, in any answer', async () => {
    const { run, client } = await setup();
    const answers: string[] = [];
    for (const [channel, field, secret] of SECRETS) {
      const saved = await mutation(client, 'settings.channel.configure', {
        name: channel,
        values: { [field]: secret },
      });
      expect(saved.ok).toBe(true);
      answers.push(JSON.stringify(saved));
      answers.push(JSON.stringify(await mutation(client, 'settings.channel.validate', { name: channel, values: {} })));
      // An empty secret in a later form keeps the stored one (the form never has it).
      answers.push(
        JSON.stringify(
          await mutation(client, 'settings.channel.configure', { name: channel, values: { [field]: '' } }),
        ),
      );
      // A refused enable explains what is missing without quoting what is set.
      answers.push(JSON.stringify(await mutation(client, 'settings.feature.enable', { name: channel })));
    }
    answers.push(await catalog(run));
    const config = JSON.parse(readFileSync(join(run.dataDir, 'config.json'), 'utf8'));
    for (const [channel, field, secret] of SECRETS) {
      expect(config.channels[channel][field]).toBe(secret);
      for (const answer of answers) expect(answer).not.toContain(secret);
    }
    // Their keys are listed as configured.
    expect(await catalog(run)).toContain('"channels.slack.botToken"');
  });

  it('refuses form keys outside the setup description, and never writes them', async () => {
    const { run, client, api, decoy, configPath } = await setup();
    const before = readFileSync(configPath, 'utf8');
    const keys = [
      'apiBase',
      'channels.telegram.apiBase',
      'enabled',
      'channels.telegram.enabled',
      'webhookUrl',
      '__proto__',
      'constructor',
      'prototype',
      'toString',
      'channels.slack.botToken',
      'channels.telegram.__proto__',
      '../websocket',
      'token.length',
      'allowFrom.0',
      'channels..token',
      'channels.telegram',
      'CHANNELS.TELEGRAM.TOKEN',
      'Token',
      ' token',
      '',
    ];
    for (const action of ['settings.channel.configure', 'settings.channel.validate']) {
      for (const key of keys) {
        const answer = await mutation(client, action, {
          name: 'telegram',
          values: { token: '4242:TEST-TOKEN', [key]: decoy.url },
        });
        expect(answer.error?.status, `${action} ${key}`).toBe(400);
      }
    }
    // The JSON spelling of a prototype key reaches the server as an own key.
    const proto = await mutation(
      client,
      'settings.channel.configure',
      JSON.parse('{"name":"telegram","values":{"__proto__":{"enabled":true}}}'),
    );
    expect(proto.error?.status).toBe(400);
    expect(readFileSync(configPath, 'utf8')).toBe(before);
    // The check runs against the configured endpoint only.
    const checked = await mutation(client, 'settings.channel.validate', {
      name: 'telegram',
      values: { token: api.token },
    });
    expect(checked.result).toMatchObject({ status: 'connected' });
    expect(decoy.callsOf('getMe')).toHaveLength(0);
    expect(api.callsOf('getMe').length).toBeGreaterThan(0);
    expect(run).toBeDefined();
  });

  it('refuses channel names that are not ours', async () => {
    const { client, configPath } = await setup();
    const before = readFileSync(configPath, 'utf8');
    const names: unknown[] = [
      '../websocket',
      'telegram/../websocket',
      '..',
      '__proto__',
      'constructor',
      'toString',
      'hasOwnProperty',
      'TELEGRAM',
      'telegram\u0000',
      'tele%67ram',
      'x'.repeat(65),
      'x'.repeat(10_000),
      'icq',
      '',
      '   ',
      7,
      null,
      ['telegram'],
      { name: 'telegram' },
      true,
    ];
    for (const name of names) {
      for (const action of [
        'settings.feature.enable',
        'settings.feature.disable',
        'settings.channel.configure',
        'settings.channel.validate',
      ]) {
        const answer = await mutation(client, action, { name, values: {} });
        expect([400, 404], `${action} ${JSON.stringify(name)?.slice(0, 40)}`).toContain(answer.error?.status);
      }
      const connect = await mutation(client, 'settings.channel.connect.start', { channel: name });
      expect([400, 404]).toContain(connect.error?.status);
    }
    expect(readFileSync(configPath, 'utf8')).toBe(before);
  });

  it('refuses wrong-typed and oversize values', async () => {
    const { client, configPath } = await setup();
    const before = readFileSync(configPath, 'utf8');
    const forms: [string, unknown][] = [
      ['telegram', 'not an object'],
      ['telegram', ['token', 'x']],
      ['telegram', 42],
      ['telegram', { token: { nested: 'x' } }],
      ['telegram', { token: ['a', 'b'] }],
      ['telegram', { token: 'x'.repeat(5000) }],
      ['telegram', { groupPolicy: 'everyone' }],
      ['telegram', { groupPolicy: 'open; rm -rf /' }],
      ['telegram', { allowFrom: { a: 1 } }],
      ['telegram', { allowFrom: Array.from({ length: 501 }, (_, i) => String(i)) }],
      ['telegram', { allowFrom: [{ id: 1 }] }],
      ['email', { imapPort: '12abc' }],
      ['email', { imapPort: 1.5 }],
      ['email', { imapPort: '0x10' }],
      ['email', { imapPort: '1e3' }],
      ['email', { imapPort: 99999 }],
      ['email', { consentGranted: 'maybe' }],
      ['email', { consentGranted: 2 }],
      ['feishu', { domain: 'evil.example' }],
      ['telegram', Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']))],
    ];
    for (const [name, values] of forms) {
      const answer = await mutation(client, 'settings.channel.configure', { name, values });
      expect(answer.error?.status, JSON.stringify(values).slice(0, 60)).toBe(400);
    }
    const enable = await mutation(client, 'settings.channel.configure', {
      name: 'telegram',
      values: {},
      enable: { yes: 1 },
    });
    expect(enable.error?.status).toBe(400);
    expect(readFileSync(configPath, 'utf8')).toBe(before);
  });

  it('refuses pairing codes and revocations that are not ones', async () => {
    const { client } = await setup();
    const codes: unknown[] = [
      '',
      '   ',
      'x'.repeat(33),
      '*',
      '%',
      'ABCD-EFG?',
      '../pairing',
      '__proto__',
      7,
      null,
      ['ABCD-EFGH'],
      { code: 'x' },
    ];
    for (const code of codes) {
      for (const action of ['settings.pairing.approve', 'settings.pairing.deny']) {
        const answer = await mutation(client, action, { code });
        expect([400, 404], `${action} ${JSON.stringify(code)}`).toContain(answer.error?.status);
      }
    }
    const revokes: unknown[] = [
      { channel: '../x', sender_id: '1' },
      { channel: '__proto__', sender_id: '1' },
      { channel: 'telegram', sender_id: '' },
      { channel: 'telegram', sender_id: 'x'.repeat(300) },
      { channel: 'telegram', sender_id: '__proto__' },
      { channel: 'telegram', sender_id: 'never-approved' },
      { channel: 7, sender_id: 1 },
    ];
    for (const payload of revokes) {
      const answer = await mutation(client, 'settings.pairing.revoke', payload);
      expect([400, 404], JSON.stringify(payload).slice(0, 60)).toContain(answer.error?.status);
    }
  });

  it('keeps the pairing store whole for channel names every object has', async () => {
    const store = new PairingStore({ dir: join(mkdtempSync(join(tmpdir(), 'nb-pairing-')), 'pairing') });
    for (const channel of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf']) {
      expect(store.isApproved(channel, '1')).toBe(false);
      expect(store.approved(channel)).toEqual({});
      expect(await store.revoke(channel, '1')).toBe(false);
      await expect(store.requestCode(channel, { id: '1' }, '1')).rejects.toThrow(/invalid channel name/);
    }
    expect(store.listPending()).toEqual([]);
  });
});
