import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app/gateway.js';
import { formatCode, PairingStore } from '../../src/channels/pairing.js';
import { loadConfig } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/lifecycle.js';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { eventually } from './contract.js';
import { type FakeBotApi, startFakeBotApi } from './telegram/fake-bot-api.js';
import { writeTelegramConfig } from './telegram/helpers.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function onboardedHome(): Promise<string> {
  const home = tempHome();
  const result = await runCli(['channels', 'status'], home);
  expect(result.code).toBe(0);
  return home;
}

describe('nanobot channels', () => {
  it('status lists the channels, who may talk, and that no gateway runs', async () => {
    const home = tempHome();
    const { code, stdout } = await runCli(['channels', 'status'], home);
    expect(code).toBe(0);
    expect(stdout).toMatch(/Channels \(.*config\.json\):/);
    expect(stdout).toMatch(/Telegram\s+disabled/);
    expect(stdout).toContain('Gateway: not running');
  });

  it('status says why an enabled channel cannot start', async () => {
    const home = await onboardedHome();
    editConfig(home, (config) => {
      config.channels = { telegram: { enabled: true, allowFrom: ['@me', '12345'] } };
    });
    const { stdout } = await runCli(['channels', 'status'], home);
    expect(stdout).toMatch(/Telegram\s+enabled, but not ready: channels\.telegram\.token is not set/);
    editConfig(home, (config) => {
      config.channels = { telegram: { enabled: true, token: '1:abc', allowFrom: ['@me', '12345'] } };
    });
    const ready = await runCli(['channels', 'status'], home);
    expect(ready.stdout).toMatch(/Telegram\s+enabled · allowFrom: @me, 12345 · groups: mention/);
  });

  it('login names the key to set for a token-based platform, and rejects unknown channels', async () => {
    const home = tempHome();
    const login = await runCli(['channels', 'login', 'telegram'], home);
    expect(login.code).toBe(0);
    expect(login.stdout).toContain('Telegram needs no interactive login: set channels.telegram.token in');
    // Each missing credential with the help text the WebUI's channel form shows (one setup description).
    expect(login.stdout).toContain('channels.telegram.token (Bot token): Create a bot with @BotFather');
    expect(login.stdout).toContain('@BotFather');
    expect(login.stdout).toContain('set channels.telegram.enabled to true');
    const unknown = await runCli(['channels', 'login', 'carrier-pigeon'], home);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('Error: Unknown channel "carrier-pigeon".');
    expect(unknown.stderr).toMatch(/Hint: Channels: .*telegram/);
  });

  it('pair list / approve / deny work on the pairing files', async () => {
    const home = await onboardedHome();
    const store = new PairingStore({ dir: join(home, '.nanobot', 'pairing') });
    expect((await runCli(['channels', 'pair', 'list'], home)).stdout).toBe('No pending pairing requests.\n');
    const { code } = await store.requestCode('telegram', { id: '321', username: 'carol' }, '321');
    const { code: other } = await store.requestCode('telegram', { id: '654' }, '654');
    expect((await runCli(['channels', 'pair', 'list'], home)).stdout).toContain(
      `${formatCode(code)}  telegram  @carol (321)`,
    );

    const approve = await runCli(['channels', 'pair', 'approve', formatCode(code)], home);
    expect(approve.code).toBe(0);
    expect(approve.stdout).toContain('Approved @carol (321) on telegram.');
    expect(store.isApproved('telegram', '321')).toBe(true);
    expect((await runCli(['channels', 'pair', 'deny', other], home)).stdout).toContain('Denied 654 on telegram.');
    const missing = await runCli(['channels', 'pair', 'approve', 'AAAA-BBBB'], home);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toMatch(/No pending pairing request has the code AAAA-BBBB/);
  });

  it('status shows the running gateway’s view of each channel', async () => {
    const api: FakeBotApi = await startFakeBotApi();
    const llm: FakeLLM = await startFakeLLM();
    const { configPath, home } = await writeTelegramConfig(api, llm);
    const loaded = await loadConfig({ configPath, home, env: {} });
    const gateway: Gateway = await startGateway({ loaded, port: 0, env: {}, watchConfig: false });
    cleanup.push(async () => {
      await gateway.shutdown();
      await api.close();
      await llm.close();
    });
    await eventually(async () => {
      const { stdout } = await runCli(['channels', 'status'], home);
      expect(stdout).toMatch(/Telegram\s+enabled · allowFrom: @owner_user · groups: mention · running/);
      expect(stdout).toContain(`Gateway: running (pid ${process.pid})`);
    });
  });
});
