/**
 * Channels follow a config reload (src/app/gateway-channels.ts): switched on → built and started, switched off →
 * stopped, a connection key changed → restarted; keys read live and the WebSocket channel (which serves the WebUI)
 * never cause a restart.
 */
import { describe, expect, it } from 'vitest';
import { channelSync } from '../../src/app/gateway-channels.js';
import { BASIC_CAPABILITIES, type Channel } from '../../src/channels/channel.js';
import { ConfigSchema } from '../../src/config/schema.js';

function fakeChannel(name: string, events: string[]): Channel {
  return {
    name,
    capabilities: BASIC_CAPABILITIES,
    start: async () => {},
    stop: async () => {
      events.push(`stop ${name}`);
    },
    send: async () => {},
    status: () => 'running',
  };
}

function harness(initial: Record<string, unknown>) {
  const events: string[] = [];
  const channels: Channel[] = [];
  const sync = channelSync(
    {
      channels,
      manager: {
        add: (channel) => events.push(`add ${channel.name}`),
        remove: async (name) => {
          events.push(`remove ${name}`);
          return true;
        },
      },
      router: { addChannel: () => {}, removeChannel: () => {} },
      build: async (name) => {
        events.push(`build ${name}`);
        return fakeChannel(name, events);
      },
      log: { debug: () => {}, info: () => {}, warn: (line) => events.push(`warn ${line}`), error: () => {} },
    },
    ConfigSchema.parse({ channels: initial }),
  );
  const apply = (next: Record<string, unknown>) => sync(ConfigSchema.parse({ channels: next }));
  return { events, channels, apply };
}

describe('channels follow a config reload', () => {
  it('starts a channel switched on, restarts it for a new token, not for live keys, and stops it when off', async () => {
    const h = harness({ telegram: { enabled: false, token: 'a' } });
    await h.apply({ telegram: { enabled: true, token: 'a' } });
    expect(h.events).toEqual(['build telegram', 'add telegram']);
    expect(h.channels.map((c) => c.name)).toEqual(['telegram']);

    h.events.length = 0;
    await h.apply({ telegram: { enabled: true, token: 'a', allowFrom: ['@x'], groupPolicy: 'open' } });
    expect(h.events).toEqual([]);

    await h.apply({ telegram: { enabled: true, token: 'b', allowFrom: ['@x'], groupPolicy: 'open' } });
    expect(h.events).toEqual(['remove telegram', 'build telegram', 'add telegram']);

    h.events.length = 0;
    await h.apply({ telegram: { enabled: false, token: 'b' } });
    expect(h.events).toEqual(['remove telegram']);
    expect(h.channels).toEqual([]);
  });

  it('never stops or restarts the WebSocket channel, and ignores channels this build has not', async () => {
    const h = harness({ websocket: { enabled: true, port: 8765 } });
    await h.apply({ websocket: { enabled: false, port: 9999 }, zulip: { enabled: true } });
    expect(h.events.filter((e) => !e.startsWith('warn'))).toEqual([]);
    expect(h.events.some((e) => e.includes('channels.websocket changes apply after a gateway restart'))).toBe(true);
  });

  it('follows each instance of a channel with several bots (feishu, feishu.<id>) on its own', async () => {
    const bot = (appId: string, extra: Record<string, unknown> = {}) => ({
      enabled: true,
      appId,
      appSecret: 's',
      ...extra,
    });
    const h = harness({});
    await h.apply({ feishu: bot('cli_a') });
    expect(h.events).toEqual(['build feishu', 'add feishu']);
    h.events.length = 0;
    await h.apply({
      feishu: {
        instances: [
          { id: 'default', ...bot('cli_a') },
          { id: 'sales', ...bot('cli_b') },
        ],
      },
    });
    // The first bot only moved into `instances`: it keeps running.
    expect(h.events).toEqual(['build feishu.sales', 'add feishu.sales']);

    h.events.length = 0;
    await h.apply({
      feishu: {
        instances: [
          { id: 'default', ...bot('cli_a') },
          { id: 'sales', ...bot('cli_c') },
        ],
      },
    });
    expect(h.events).toEqual(['remove feishu.sales', 'build feishu.sales', 'add feishu.sales']);

    h.events.length = 0;
    await h.apply({ feishu: { allowFrom: ['ou_1'], instances: [{ id: 'default', ...bot('cli_a') }] } });
    expect(h.events).toEqual(['remove feishu.sales']);
    expect(h.channels.map((c) => c.name)).toEqual(['feishu']);
  });
});
