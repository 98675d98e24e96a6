/**
 * The built `nanobot` with Feishu: `channels login feishu` draws the scan-to-create QR code in the terminal and saves
 * the new bot into config.json while `gateway` runs, which starts it without a restart; a second bot added to
 * `channels.feishu.instances` starts beside it as `feishu.sales`; both answer their own chats, `channels status`
 * names each, and a cron reminder set for the sales chat goes out through the sales bot. No secret is printed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { APP, startFakeFeishu } from '../channels/feishu/fake-open-platform.js';
import { startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, spawnGateway } from './channel-e2e.js';
import { editConfig, runCli, spawnCli } from './cli-helpers.js';

const OWNER = { openId: 'ou_owner_e2e', userId: 'owner' };
const SALES_APP = { id: 'cli_5a1e5a1e5a1e5a1e', secret: 'SalesAppSecret0123456789abcdef' };
const CHAT = 'oc_e2e_chat';

const cleanup = cleanupsAfterEach();

describe('nanobot gateway with channels.feishu', () => {
  it('QR login in the terminal while the gateway runs, then a second bot; each answers its own chats', async () => {
    const main = await startFakeFeishu();
    const sales = await startFakeFeishu({ app: SALES_APP });
    const llm = await startFakeLLM();
    cleanup(
      () => main.close(),
      () => sales.close(),
      () => llm.close(),
    );
    const block = { enabled: false, domain: main.url, allow_from: [OWNER.openId], streaming: false };
    const home = await homeWithChannel('feishu', llm, block, { asWritten: true });
    editConfig(home, (c) => {
      c.agents.defaults.timezone = 'UTC';
    });
    const gateway = spawnGateway(home, cleanup);
    const dump = (err: unknown) => {
      throw new Error(`${String(err)}\n--- gateway:\n${gateway.output()}`);
    };
    await eventually(() => expect(gateway.output()).toMatch(/listening on/), 30_000).catch(dump);

    const login = spawnCli(['channels', 'login', 'feishu'], home);
    cleanup(() => login.child.kill('SIGTERM'));
    await eventually(() => expect(login.output()).toContain(`${main.url}/verification?user_code=UC1`), 20_000);
    expect(login.output()).toMatch(/[▀▄█]/);
    main.registration.scan(APP);
    expect(await login.exited).toBe(0);
    expect(login.output()).toMatch(new RegExp(`App ID ${APP.id} \\(feishu\\), saved as feishu\\b`));
    expect(login.output()).not.toContain(APP.secret);
    const saved = JSON.parse(readFileSync(join(home, '.nanobot', 'config.json'), 'utf8')).channels.feishu;
    expect(saved).toMatchObject({ enabled: true, appId: APP.id, appSecret: APP.secret, domain: main.url });

    // The gateway's file watcher starts the new bot.
    await eventually(() => expect(main.connections).toBe(1), 30_000).catch(dump);
    llm.enqueue({ text: 'Main bot, from the built gateway.' });
    main.userSays({ chatId: CHAT, from: OWNER, text: 'hi' });
    await eventually(() => expect(main.shown(CHAT)).toEqual(['Main bot, from the built gateway.']), 20_000).catch(dump);

    // A second bot, in upstream's instances shape (the shared keys beside `instances`).
    editConfig(home, (c) => {
      const channels = c.channels as Record<string, Record<string, unknown>>;
      const { allowFrom, allow_from, streaming, ...own } = channels.feishu as Record<string, unknown>;
      channels.feishu = {
        allowFrom: allowFrom ?? allow_from,
        streaming,
        instances: [
          { ...own, id: 'default' },
          { id: 'sales', enabled: true, appId: SALES_APP.id, appSecret: SALES_APP.secret, domain: sales.url },
        ],
      };
    });
    await eventually(() => expect(sales.connections).toBe(1), 30_000).catch(dump);
    // Only the file's shape changed for the first bot: it kept its connection.
    expect(main.connections).toBe(1);
    llm.enqueue({ text: 'Sales bot here.' });
    sales.userSays({ chatId: CHAT, from: OWNER, text: 'hello sales' });
    await eventually(() => expect(sales.shown(CHAT)).toEqual(['Sales bot here.']), 20_000).catch(dump);
    expect(main.shown(CHAT)).toEqual(['Main bot, from the built gateway.']);

    const status = await runCli(['channels', 'status'], home);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/Feishu \/ Lark\s+enabled · allowFrom: .*running/);
    expect(status.stdout).toMatch(/feishu\.sales\s+enabled · allowFrom: .*running/);

    const at = new Date(Date.now() + 3_000).toISOString().slice(0, 19);
    const add = await runCli(
      ['cron', 'add', '--message', 'Standup now!', '--at', at, '--channel', 'feishu.sales', '--chat-id', CHAT],
      home,
    );
    expect(add.code, add.stderr).toBe(0);
    await eventually(() => expect(sales.shown(CHAT)).toContain('Standup now!'), 30_000).catch(dump);
    expect(main.shown(CHAT)).toEqual(['Main bot, from the built gateway.']);

    const output = gateway.output() + status.stdout + status.stderr;
    expect(output).not.toContain(APP.secret);
    expect(output).not.toContain(SALES_APP.secret);
  }, 150_000);
});
