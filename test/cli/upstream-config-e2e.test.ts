/**
 * The built CLI over homes written by real upstream nanobot, and over configs that set keys this version does not act
 * on: read-only commands work and leave the config byte for byte; whatever is set but ignored, or unknown, is named by
 * doctor, status and the gateway's start-up log; a missing `-c` file is an error, never created.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isRegistered, UNSUPPORTED_KEYS } from '../../src/config/unsupported.js';
import { eventually } from '../helpers/eventually.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { type UpstreamHome, type UpstreamHomeName, upstreamHome } from '../helpers/upstream-homes.js';
import { type ConfigJson, editConfig, runCli, type SpawnedCli, spawnCli, tempHome } from './cli-helpers.js';

const HOMES: UpstreamHomeName[] = ['pyhome', 'pyhome-agentonly', 'py030home'];
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function unpack(name: UpstreamHomeName): UpstreamHome {
  const home = upstreamHome(name);
  cleanups.push(home.cleanup);
  return home;
}

describe('upstream homes, untouched', () => {
  it.each(HOMES)('%s: status, doctor and cron list succeed and leave config.json byte for byte', async (name) => {
    const home = unpack(name);
    const before = readFileSync(home.configPath);
    for (const args of [['status'], ['doctor'], ['cron', 'list']]) {
      const result = await runCli(args, home.home);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
      expect(result.stderr).not.toMatch(/Invalid|Error/);
      expect(readFileSync(home.configPath).equals(before), `${args.join(' ')} changed config.json`).toBe(true);
    }
    const doctor = await runCli(['doctor'], home.home);
    expect(doctor.stdout).toContain('✓ Settings: consistent');
    expect(doctor.stdout).toContain('Model test-model');
    const status = (await runCli(['status'], home.home, { TZ: 'Asia/Tokyo' })).stdout;
    expect(status).not.toContain('Config notes');
    // Upstream wrote timezoneMode "manual" (pyhome) or no mode beside a timezone (v0.3.0): the zone as written.
    expect(status).toContain(`Time zone:  ${name === 'py030home' ? 'UTC' : 'Europe/Berlin'}\n`);
  });

  it('onboard on a pyhome completes it (upstream’s values and nulls kept) instead of refusing it', async () => {
    const home = unpack('pyhome');
    const result = await runCli(['onboard'], home.home);
    expect(result.code, result.stderr).toBe(0);
    const written = JSON.parse(readFileSync(home.configPath, 'utf8')) as ConfigJson;
    expect((written.channels as Record<string, unknown>).transcriptionLanguage).toBeNull();
    expect(written.agents.defaults.timezone).toBe('Europe/Berlin');
    expect(written.agents.defaults.timezoneMode).toBe('manual');
  });
});

/** Every registry key, set to something other than upstream's default. */
const UNSUPPORTED_SET: [string, (c: ConfigJson) => void][] = [
  ['agents.defaults.unifiedSession', (c) => Object.assign(c.agents.defaults, { unifiedSession: true })],
  ['agents.defaults.botName', (c) => Object.assign(c.agents.defaults, { botName: 'Max' })],
  ['agents.defaults.botIcon', (c) => Object.assign(c.agents.defaults, { botIcon: '*' })],
  ['agents.defaults.contextBlockLimit', (c) => Object.assign(c.agents.defaults, { contextBlockLimit: 5000 })],
  ['agents.defaults.failOnToolError', (c) => Object.assign(c.agents.defaults, { failOnToolError: false })],
  ['agents.defaults.dream.cron', (c) => Object.assign(c.agents.defaults, { dream: { cron: '0 3 * * *' } })],
  [
    'agents.defaults.fallbackModels.0.contextWindowTokens',
    (c) =>
      Object.assign(c.agents.defaults, {
        fallbackModels: [{ model: 'm', provider: 'custom', contextWindowTokens: 9 }],
      }),
  ],
  ['gateway.restartMode', (c) => Object.assign(c, { gateway: { restartMode: 'exit' } })],
  ['providers.custom.proxy', (c) => Object.assign(c.providers.custom ?? {}, { proxy: 'http://127.0.0.1:3128' })],
  ['providers.custom.displayName', (c) => Object.assign(c.providers.custom ?? {}, { displayName: 'Mine' })],
  ['tools.web.proxy', (c) => Object.assign(c, { tools: { web: { proxy: 'http://127.0.0.1:3128' } } })],
  ['tools.my', (c) => Object.assign(c, { tools: { my: { allowSet: true } } })],
  ['tools.cliApps', (c) => Object.assign(c, { tools: { cliApps: { enable: false } } })],
  ['tools.webuiAllowLocalServiceAccess', (c) => Object.assign(c, { tools: { webuiAllowLocalServiceAccess: false } })],
  [
    'tools.webuiAllowRemotePackageInstall',
    (c) => Object.assign(c, { tools: { webuiAllowRemotePackageInstall: true } }),
  ],
  // Keys of upstream's blocks for channels we have, which those channels do not read: each set to a non-default.
  ...(
    [
      ['telegram', 'reactEmoji', '🔥'],
      ['telegram', 'connectionPoolSize', 8],
      ['telegram', 'poolTimeout', 9],
      ['telegram', 'inlineKeyboards', true],
      ['telegram', 'richMessages', true],
      ['discord', 'readReceiptEmoji', '✅'],
      ['discord', 'workingEmoji', '⏳'],
      ['discord', 'workingEmojiDelay', 5],
      ['discord', 'proxy', 'http://127.0.0.1:3128'],
      ['discord', 'proxyUsername', 'me'],
      ['discord', 'proxyPassword', 'pw'],
      ['slack', 'userTokenReadOnly', false],
      ['slack', 'reactEmoji', 'fire'],
      ['slack', 'doneEmoji', 'tada'],
      ['slack', 'webhookPath', '/hooks/slack'],
      ['feishu', 'reactEmoji', 'OK'],
      ['feishu', 'doneEmoji', 'DONE'],
      ['feishu', 'toolHintPrefix', '>'],
      ['email', 'postActionExpunge', true],
      ['matrix', 'sasVerification', true],
      ['matrix', 'syncStopGraceSeconds', 5],
      ['matrix', 'maxMediaBytes', 1024],
      ['matrix', 'maxConcurrentMediaDownloads', 4],
      ['mattermost', 'reactEmoji', 'fire'],
      ['mattermost', 'doneEmoji', 'tada'],
      ['mattermost', 'streamingMaxChars', 4000],
      ['mattermost', 'allowFromMatchMode', 'email'],
      ['msteams', 'validateInboundAuth', false],
      ['weixin', 'replyProgressMessages', true],
      ['weixin', 'replyProgressMaxMessages', 3],
      ['weixin', 'blockStreaming', true],
      ['weixin', 'blockStreamingMinChars', 600],
      ['weixin', 'blockStreamingMaxMessages', 2],
      ['napcat', 'groupPolicy', 0.3],
      ['napcat', 'groupPolicyOverrides', { '123456': 0.5 }],
      ['dingtalk', 'allowRemoteMediaRedirects', true],
      ['dingtalk', 'remoteMediaRedirectAllowedHosts', ['cdn.example.com']],
      ['qq', 'mediaDir', '/srv/qq-media'],
      ['qq', 'downloadChunkSize', 65_536],
      ['whatsapp', 'bridgeUrl', 'ws://127.0.0.1:3001'],
      ['whatsapp', 'bridgeToken', 'bridge-secret'],
      ['whatsapp', 'databasePath', '/tmp/neonize.db'],
      ['websocket', 'unixSocketPath', '/tmp/nb.sock'],
      ['websocket', 'trustedProxyAuth', { header: 'X-User' }],
      ['websocket', 'pingTimeoutS', 30],
      ['websocket', 'sslCertfile', '/tmp/cert.pem'],
      ['websocket', 'sslKeyfile', '/tmp/key.pem'],
    ] as const
  ).map(([name, key, value]): [string, (c: ConfigJson) => void] => [
    `channels.${name}.${key}`,
    (c) => {
      const channels = c.channels as Record<string, Record<string, unknown> | undefined>;
      channels[name] = { ...(channels[name] ?? {}), [key]: value };
    },
  ]),
];

async function configuredHome(edit: (c: ConfigJson) => void): Promise<string> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1' };
    edit(c);
  });
  return home;
}

describe('keys set but not acted on, and unknown keys, are named', () => {
  it('every registry key set in one config: doctor and status name each as "not supported in this version"', async () => {
    // The channel edits each replace `channels`; merge them so all the missing channels are enabled at once.
    const home = await configuredHome((c) => {
      const channels: Record<string, unknown> = {};
      const tools: Record<string, unknown> = {};
      for (const [, edit] of UNSUPPORTED_SET) {
        const part = structuredClone(c);
        edit(part);
        Object.assign(channels, part.channels);
        Object.assign(tools, part.tools);
        Object.assign(c, { ...part, channels, tools });
      }
    });
    const doctor = await runCli(['doctor'], home);
    const status = await runCli(['status'], home);
    expect(status.code).toBe(0);
    // Every registry entry has a row here; a row whose entry was removed (its key works now) is skipped.
    for (const entry of UNSUPPORTED_KEYS) {
      const covered = UNSUPPORTED_SET.some(([path]) =>
        path.split('.').every((part, i, all) => {
          const pattern = entry.path.split('.');
          return pattern.length === all.length && (pattern[i] === '*' || pattern[i] === part);
        }),
      );
      expect(covered, `no row sets ${entry.path}`).toBe(true);
    }
    for (const [path] of UNSUPPORTED_SET.filter(([path]) => isRegistered(path.split('.')))) {
      expect(doctor.stdout).toContain(`! Settings: not supported in this version: ${path}`);
      expect(status.stdout).toContain(`  ! not supported in this version: ${path}`);
    }
    expect(doctor.stdout).not.toContain('Settings: consistent');
    expect(doctor.stdout).not.toContain('unknown key');
  });

  it('one such key alone is enough to lose "Settings: consistent"', async () => {
    const home = await configuredHome((c) => Object.assign(c, { tools: { my: { allowSet: true } } }));
    const doctor = await runCli(['doctor'], home);
    expect(doctor.stdout).toContain('! Settings: not supported in this version: tools.my (allowSet) — ');
    expect(doctor.stdout).not.toContain('Settings: consistent');
  });

  it('a misspelled key is reported with the key it probably meant, at any level, and is not fatal', async () => {
    const home = await configuredHome((c) => {
      Object.assign(c.agents.defaults, { modle: 'gpt-x' });
      Object.assign(c, { tools: { exec: { timout: 5 } } });
      c.providers.openruter = { apiKey: 'sk-or' };
      (c.channels as Record<string, unknown>).discord = { enabled: false, allowChannel: ['1'] };
    });
    const doctor = await runCli(['doctor'], home);
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toContain('! Settings: unknown key agents.defaults.modle, ignored — did you mean `model`?');
    expect(doctor.stdout).toContain('unknown key tools.exec.timout, ignored — did you mean `timeout`?');
    expect(doctor.stdout).toContain(
      'unknown key channels.discord.allowChannel, ignored — did you mean `allowChannels`?',
    );
    expect(doctor.stdout).toContain(
      'providers.openruter is not a built-in provider and has no apiBase, so it is never used; did you mean providers.openrouter?',
    );
    expect(doctor.stdout).not.toContain('Settings: consistent');
    const status = await runCli(['status'], home);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('  ! unknown key agents.defaults.modle, ignored — did you mean `model`?');
  });

  it('timezoneMode "auto" (what onboard writes) follows the system’s zone', async () => {
    const home = await configuredHome(() => {});
    const status = await runCli(['status'], home, { TZ: 'Asia/Tokyo' });
    expect(status.stdout).toContain("Time zone:  Asia/Tokyo (auto: the system's)");
    expect(status.stdout).toMatch(/agents\.defaults\.timezone "[^"]+" is not used: timezoneMode is "auto"/);
  });

  it('an environment override counts as set (NANOBOT_TOOLS__MY__ALLOW_SET)', async () => {
    const home = await configuredHome(() => {});
    const status = await runCli(['status'], home, { NANOBOT_TOOLS__MY__ALLOW_SET: 'true' });
    expect(status.stdout).toContain('! not supported in this version: tools.my (allowSet)');
  });

  it('the gateway’s start-up log names each one', async () => {
    let fake: FakeLLM | undefined = await startFakeLLM([]);
    cleanups.push(() => fake?.close());
    const home = await configuredHome((c) => {
      c.providers.custom = { apiKey: 'k', apiBase: `${fake?.url}/v1` };
      Object.assign(c, {
        channels: { websocket: { enabled: false }, telegram: { reactEmoji: '🔥' }, sendProgres: false },
        tools: { my: { allowSet: true } },
      });
    });
    const gateway: SpawnedCli = spawnCli(['gateway', '--port', '0'], home);
    cleanups.push(async () => {
      gateway.child.kill('SIGKILL');
      await gateway.exited;
      fake = undefined;
    });
    await eventually(() => gateway.output().includes('gateway: listening on'), { timeoutMs: 20_000 });
    const log = gateway.output();
    expect(log).toContain('config: not supported in this version: tools.my (allowSet)');
    expect(log).toContain('config: not supported in this version: channels.telegram.reactEmoji');
    expect(log).toContain('config: unknown key channels.sendProgres, ignored — did you mean `sendProgress`?');
    const logFile = readFileSync(join(home, '.nanobot', 'logs', 'gateway.log'), 'utf8');
    expect(logFile).toContain('config: not supported in this version: tools.my (allowSet)');
  });
});

describe('the config file: never created by mistake, never written when refused', () => {
  it.each([['status'], ['doctor'], ['cron', 'list'], ['agent', '-m', 'hi'], ['gateway']])(
    '%s -c typo.json says it does not exist and how to create it, exits non-zero, creates nothing',
    async (...args) => {
      const home = tempHome();
      const result = await runCli([...args, '-c', 'typo.json'], home);
      expect(result.code).not.toBe(0);
      expect(`${result.stdout}${result.stderr}`).toContain('typo.json does not exist');
      expect(`${result.stdout}${result.stderr}`).toContain('nanobot onboard -c typo.json');
      expect(existsSync(join(home, 'typo.json'))).toBe(false);
      expect(existsSync(join(process.cwd(), 'typo.json'))).toBe(false);
      expect(existsSync(join(home, '.nanobot'))).toBe(false);
    },
  );

  it('the first run that creates ~/.nanobot/config.json says so in one line, and only the first', async () => {
    const home = tempHome();
    const first = await runCli(['status'], home);
    expect(first.code).toBe(0);
    const path = join(home, '.nanobot', 'config.json');
    expect(first.stderr).toBe(
      `nanobot: created ${path} with the defaults (\`nanobot onboard --wizard\` sets a provider and key)\n`,
    );
    expect((await runCli(['status'], home)).stderr).toBe('');
  });

  it.each([
    '{"agents": {"defaults": {"maxTokens": "lots"}}, "channels": {"transcriptionLanguage": null}}',
    '{"gateway": {"port": 99999}}',
  ])('onboard refuses %s, says which key, and leaves the file byte for byte', async (text) => {
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    const path = join(home, '.nanobot', 'config.json');
    writeFileSync(path, text);
    const result = await runCli(['onboard'], home);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/Invalid .*config\.json:\n {2}(agents\.defaults\.maxTokens|gateway\.port)/);
    expect(readFileSync(path, 'utf8')).toBe(text);
  });
});
