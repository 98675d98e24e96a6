/**
 * The channel framework's part in several bots per channel: runtime names (`<name>` for the default instance,
 * `<name>.<id>` for others), the blocks the gateway builds from, a channel built under its runtime name (its media
 * dir, pairing key and bus messages carry it), and a login that checks only what it needs.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runtimeName } from '../../src/channels/definition.js';
import { PairingStore } from '../../src/channels/pairing.js';
import { findChannel, resolveChannel, runtimeBlock, runtimeBlocks } from '../../src/channels/registry.js';
import { ConfigSchema } from '../../src/config/schema.js';

const config = (channels: Record<string, unknown>) => ConfigSchema.parse({ channels });

describe('runtime names and blocks', () => {
  it('a one-bot channel is its block; a channel with instances is one block per instance', () => {
    const blocks = runtimeBlocks(
      config({
        telegram: { enabled: true, token: 't' },
        feishu: {
          groupPolicy: 'open',
          instances: [
            { id: 'default', appId: 'a' },
            { id: 'ops', appId: 'b' },
          ],
        },
      }),
    );
    expect(blocks.telegram).toMatchObject({ enabled: true, token: 't' });
    expect(blocks.feishu).toMatchObject({ groupPolicy: 'open', appId: 'a' });
    expect(blocks['feishu.ops']).toMatchObject({ groupPolicy: 'open', appId: 'b' });
    expect(blocks.feishu?.instances).toBeUndefined();
    expect(runtimeName('feishu', 'default')).toBe('feishu');
    expect(runtimeName('feishu', 'ops')).toBe('feishu.ops');
  });

  it('resolves runtime names only for channels with instances, and a block for an instance not written yet', () => {
    expect(resolveChannel('telegram')).toMatchObject({ instance: 'default' });
    expect(resolveChannel('telegram.two')).toBeUndefined();
    expect(resolveChannel('feishu.ops')?.definition.name).toBe('feishu');
    const shared = config({ feishu: { domain: 'lark', instances: [{ id: 'default', appId: 'a' }] } });
    expect(runtimeBlock(shared, 'feishu.new')).toMatchObject({ domain: 'lark' });
    expect(runtimeBlock(shared, 'feishu.new')?.appId).toBeUndefined();
    // A plain section's keys belong to its default bot, not to a new one.
    expect(runtimeBlock(config({ feishu: { appId: 'a' } }), 'feishu.new')).toEqual({});
  });
});

describe('a channel built under its runtime name', () => {
  it('carries the name in its messages, media dir and pairing (feishu.<id> is a valid pairing key)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'nb-instances-'));
    const pairing = new PairingStore({ dir: join(dataDir, 'pairing') });
    const definition = findChannel('feishu');
    if (!definition) throw new Error('no feishu');
    const channel = await definition.create({
      name: 'feishu.ops',
      block: () => ({ enabled: true, appId: 'cli_a1b2c3d4e5f60718', appSecret: 's', domain: 'http://127.0.0.1:9' }),
      switches: () => ({ sendProgress: false, sendToolHints: false, showReasoning: false }),
      pairing,
      dataDir,
      log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
      commands: () => [],
    });
    expect(channel.name).toBe('feishu.ops');
    const { code } = await pairing.requestCode('feishu.ops', { id: 'ou_1' }, 'oc_1');
    expect(pairing.listPending()).toMatchObject([{ channel: 'feishu.ops', senderId: 'ou_1' }]);
    await pairing.approve(code);
    expect(pairing.isApproved('feishu.ops', 'ou_1')).toBe(true);
    expect(pairing.isApproved('feishu', 'ou_1')).toBe(false);
    await expect(pairing.requestCode('feishu../x', { id: 'ou_1' }, 'oc_1')).rejects.toThrow(/invalid channel/);
  });

  it('a login checks only what it needs (Feishu: no App ID yet), and still refuses a bad domain', async () => {
    const definition = findChannel('feishu');
    const context = {
      name: 'feishu',
      dataDir: mkdtempSync(join(tmpdir(), 'nb-instances-')),
      log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
      out: () => {},
    };
    expect(() => definition?.parse({ enabled: true })).toThrow(/appId is not set/);
    await expect(definition?.login?.({ domain: 'http://open.example.com' }, context)).rejects.toThrow(/https/);
  });
});
