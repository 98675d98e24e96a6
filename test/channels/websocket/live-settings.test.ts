/** `channels.websocket` is read for every frame; a config reload (a new config object) applies at once. */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MessageBus } from '../../../src/bus/message-bus.js';
import type { Channel } from '../../../src/channels/channel.js';
import { PairingStore } from '../../../src/channels/pairing.js';
import type { WebSocketChannel } from '../../../src/channels/websocket/channel.js';
import { websocketChannel } from '../../../src/channels/websocket/index.js';
import type { Logger } from '../../../src/util/log.js';
import { connect, type TestClient } from './helpers.js';

const running: { channel: Channel; clients: TestClient[] }[] = [];
afterEach(async () => {
  for (const { channel, clients } of running.splice(0)) {
    for (const client of clients) await client.close();
    await channel.stop();
  }
});

describe('WebSocket channel settings', () => {
  it('follow config reloads, and an invalid edit keeps the last good settings', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'nb-ws-live-'));
    let block: Record<string, unknown> = { port: 0, token: 'a-fixed-token-for-tests', allowFrom: ['*'] };
    const warnings: string[] = [];
    const log: Logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (message: string) => warnings.push(message),
      error: () => undefined,
    };
    const channel = (await websocketChannel.create({
      block: () => block,
      switches: () => ({ sendProgress: true, sendToolHints: true, showReasoning: true }),
      pairing: new PairingStore({ dir: join(dataDir, 'pairing') }),
      dataDir,
      log,
      commands: () => [],
    })) as WebSocketChannel;
    const bus = new MessageBus();
    await channel.start(bus);
    const c = await connect(channel.address?.port ?? 0, { token: 'a-fixed-token-for-tests', clientId: 'alice' });
    running.push({ channel, clients: [c] });
    await c.next((f) => f.event === 'ready');

    c.send({ content: 'before the reload' });
    expect((await bus.consumeInbound()).content).toBe('before the reload');

    block = { ...block, allowFrom: ['bob'] };
    c.send({ content: 'after the reload' });
    expect(await c.next((f) => f.event === 'error')).toMatchObject({ detail: 'this client is no longer allowed' });

    block = { ...block, allowFrom: ['alice'], port: 'not a port' };
    c.send({ content: 'after a bad edit' });
    expect(await c.next((f) => f.event === 'error')).toMatchObject({ detail: 'this client is no longer allowed' });
    expect(warnings.join('\n')).toMatch(/config edit ignored/);

    block = { port: 0, token: 'a-fixed-token-for-tests', allowFrom: ['alice'] };
    c.send({ content: 'after the fix' });
    expect((await bus.consumeInbound()).content).toBe('after the fix');
  });
});
