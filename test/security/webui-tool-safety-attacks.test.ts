/**
 * A hostile `settings.tool_safety.update` cannot turn a protection off silently or store nonsense: every spelling of
 * "sandbox off", "restriction off" or "whitelist everything" that is not the one explicit, confirmed form is refused,
 * and config.json is byte for byte what it was. Loose truthy spellings of the confirmation (including one planted
 * on the prototype through `__proto__`) do not count as one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tooBroadWhitelistEntry } from '../../src/security/ssrf-whitelist.js';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { type ApiClient, apiClient } from '../webui-api/api-helpers.js';

const ACTION = 'settings.tool_safety.update';
let run: WebUiGateway;
let api: ApiClient;
let file: () => string;

beforeAll(async () => {
  run = await startWebUiGateway();
  api = await apiClient(run);
  file = () => readFileSync(join(run.dataDir, 'config.json'), 'utf8');
  // Start from a normalised file with the sandbox and the restriction on.
  expect(await api.request(ACTION, { exec_sandbox: 'bwrap', restrict_to_workspace: true })).toMatchObject({ ok: true });
}, 30_000);
afterAll(async () => {
  await api?.close();
  await run?.close();
});

/** Each payload must be refused with `status`, leaving the file as it was. */
async function refusedAll(payloads: readonly unknown[], status: number) {
  const before = file();
  const accepted: string[] = [];
  for (const payload of payloads) {
    const answer = await api.request(ACTION, payload);
    const error = answer.error as { status: number } | undefined;
    if (answer.ok !== false || error?.status !== status)
      accepted.push(`${JSON.stringify(payload)} → ${JSON.stringify(answer).slice(0, 200)}`);
  }
  expect(accepted).toEqual([]);
  expect(file()).toBe(before);
}

describe('settings.tool_safety.update attacks', () => {
  it('the sandbox is not turned off or weakened without the explicit confirmation', async () => {
    const off = [{ exec_sandbox: 'none' }, { exec_sandbox: 'auto' }];
    const badConfirm = [true as unknown, 'true', 'yes', 1, '1', {}, [true], null, false].flatMap((confirm) =>
      off.map((payload) => ({ ...payload, confirm_weaker: confirm })),
    );
    const proto = off.map((payload) =>
      JSON.parse(`{"__proto__":{"confirm_weaker":true},"exec_sandbox":"${payload.exec_sandbox}"}`),
    );
    // `true` is the one valid confirmation: drop it from this list, it is tested to work in the API test.
    await refusedAll([...off, ...proto], 409);
    await refusedAll(
      badConfirm.filter((payload) => payload.confirm_weaker !== true),
      400,
    );
  });

  it('no other spelling of "sandbox off" is accepted', async () => {
    const spellings: unknown[] = [
      '',
      ' none',
      'NONE',
      'None',
      'off',
      'false',
      'disabled',
      'no',
      'bwrap ',
      'none\u0000',
      'nоne',
    ];
    await refusedAll(
      [
        ...spellings.map((exec_sandbox) => ({ exec_sandbox, confirm_weaker: true })),
        ...[null, false, 0, [], ['none'], { mode: 'none' }].map((exec_sandbox) => ({
          exec_sandbox,
          confirm_weaker: true,
        })),
      ],
      400,
    );
    // Other spellings of the key are unknown members, ignored: nothing to change.
    await refusedAll(
      [
        { execSandbox: 'none', confirm_weaker: true },
        { sandbox: 'none', confirm_weaker: true },
        { tools: { exec: { sandbox: 'none' } }, confirm_weaker: true },
        { 'exec.sandbox': 'none', confirm_weaker: true },
        JSON.parse('{"__proto__":{"exec_sandbox":"none"},"confirm_weaker":true}'),
        {},
      ],
      400,
    );
  });

  it('the workspace restriction is not switched off by a loose spelling', async () => {
    await refusedAll([{ restrict_to_workspace: false }], 409);
    await refusedAll(
      ['false', 'no', 0, '', null, [], {}, 'off'].map((restrict_to_workspace) => ({
        restrict_to_workspace,
        confirm_weaker: true,
      })),
      400,
    );
    await refusedAll([{ restrictToWorkspace: false, confirm_weaker: true }], 400);
  });

  it('the SSRF whitelist takes only addresses and ranges, none that opens (almost) everything', async () => {
    await refusedAll([{ ssrf_whitelist: ['10.0.0.0/8'] }, { ssrf_whitelist: ['192.168.0.0/16', '10.0.0.0/8'] }], 409);
    const broad = [
      '0.0.0.0/0',
      '0.0.0.0/00',
      '0.0.0.0/1',
      '128.0.0.0/1',
      '10.0.0.0/7',
      '::/0',
      '::/1',
      '::/8',
      '::/95',
      '::ffff:0:0/96',
      '::ffff:0.0.0.0/96',
      '::ffff:0:0/103',
      '::ffff:0:0:0/96',
      '64:ff9b::/96',
      '64:ff9b:1::/48',
      '2002::/16',
      '2002::/23',
      '2000::/3',
    ];
    const malformed = [
      'localhost',
      'example.com',
      'http://10.0.0.1',
      '10.0.0.0/33',
      '10.0.0.0/-1',
      '10.0.0.1/8x',
      '10.0.0.0/ 8',
      '1.2.3.4 5.6.7.8',
      '10.0.0.1,10.0.0.2',
      '999.1.1.1',
      '::gg',
      'x'.repeat(65),
    ];
    await refusedAll(
      [
        ...[...broad, ...malformed].map((entry) => ({ ssrf_whitelist: [entry], confirm_weaker: true })),
        ...[
          '10.0.0.0/8',
          ['10.0.0.0/8', 7],
          [null],
          [['10.0.0.0/8']],
          { 0: '10.0.0.0/8' },
          Array.from({ length: 65 }, (_, i) => `10.0.${i}.1`),
        ].map((ssrf_whitelist) => ({ ssrf_whitelist, confirm_weaker: true })),
      ],
      400,
    );
  });

  it('the breadth rule: sensible private ranges pass, anything holding more than a /8 of IPv4 does not', () => {
    for (const entry of [
      '10.0.0.0/8',
      '192.168.1.20',
      'fc00::/7',
      'fd00::/8',
      '::1',
      '::ffff:10.0.0.0/104',
      '2002:a00::/24',
      '64:ff9b::a00:0/104',
    ]) {
      expect(tooBroadWhitelistEntry(entry), entry).toBeNull();
    }
    for (const entry of ['9.0.0.0/7', '::/7', '::ffff:0:0/100', '2002::/20', '64:ff9b:1::/64']) {
      expect(tooBroadWhitelistEntry(entry), entry).not.toBeNull();
    }
  });
});
