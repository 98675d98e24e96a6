import { describe, expect, it } from 'vitest';
import type { Agent } from '../../src/app/agent.js';
import { healthReport, messageTargetsOf, startServices } from '../../src/app/gateway.js';
import { agentSettingsChanged, configReloader, type ReloadTarget } from '../../src/app/gateway-reload.js';
import { DRAIN_TIMEOUT_MS, gatewayShutdown, type ShutdownParts } from '../../src/app/gateway-shutdown.js';
import type { Channel } from '../../src/channels/channel.js';
import type { LoadedConfig } from '../../src/config/load.js';
import type { Logger } from '../../src/util/log.js';

function recordingLog() {
  const lines: string[] = [];
  const log = {
    debug: (m: string) => lines.push(`debug ${m}`),
    info: (m: string) => lines.push(`info ${m}`),
    warn: (m: string) => lines.push(`warn ${m}`),
    error: (m: string) => lines.push(`error ${m}`),
  } as unknown as Logger;
  return { log, lines };
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('gatewayShutdown', () => {
  function parts(order: string[], over: Partial<ShutdownParts> = {}): ShutdownParts {
    const step = (name: string) => async () => void order.push(name);
    return {
      watcher: { close: () => order.push('watcher') },
      dispatcher: {
        drain: async (ms) => {
          order.push(`drain ${ms}`);
          return { aborted: false };
        },
      },
      services: [{ stop: step('service a') }, { stop: step('service b') }],
      router: { stop: async (ms) => void order.push(`router ${ms}`) },
      deliveries: { flush: step('deliveries') },
      manager: { stop: step('channels') },
      health: { close: step('health') },
      agents: () => [{ shutdown: step('agent live') }, { shutdown: step('agent retired') }],
      removeState: () => order.push('state file'),
      log: recordingLog().log,
      ...over,
    };
  }

  it('stops in order: watcher, drain with services, router, deliveries, channels, health, agents, state file', async () => {
    const order: string[] = [];
    const stopping = gatewayShutdown(parts(order));
    expect(stopping.closing).toBe(false);
    await stopping.shutdown('test');
    await stopping.closed;
    expect(order).toEqual([
      'watcher',
      `drain ${DRAIN_TIMEOUT_MS}`,
      'service a',
      'service b',
      'router 700',
      'deliveries',
      'channels',
      'health',
      'agent live',
      'agent retired',
      'state file',
    ]);
  });

  it('runs once however often asked; closing is true from the first call', async () => {
    const order: string[] = [];
    const drained = gate();
    const stopping = gatewayShutdown(
      parts(order, {
        dispatcher: {
          drain: async () => {
            order.push('drain');
            await drained.opened;
            return { aborted: true };
          },
        },
      }),
    );
    const first = stopping.shutdown();
    const second = stopping.shutdown('again');
    expect(stopping.closing).toBe(true);
    expect(second).toBe(first);
    drained.open();
    await first;
    expect(order.filter((step) => step === 'drain')).toEqual(['drain']);
  });

  it('a failing service or agent does not stop the rest; no state file removal when none was written', async () => {
    const order: string[] = [];
    const { log, lines } = recordingLog();
    const stopping = gatewayShutdown(
      parts(order, {
        services: [{ stop: () => Promise.reject(new Error('service broke')) }],
        agents: () => [
          { shutdown: () => Promise.reject(new Error('agent broke')) },
          { shutdown: async () => void order.push('agent 2') },
        ],
        removeState: undefined,
        dispatcher: { drain: async () => ({ aborted: true }) },
        log,
      }),
    );
    await stopping.shutdown();
    expect(order).toEqual(['watcher', 'router 700', 'deliveries', 'channels', 'health', 'agent 2']);
    expect(lines.at(-1)).toMatch(/turns still running were aborted after checkpointing/);
  });
});

describe('configReloader', () => {
  const config = (model: string, port = 18790) =>
    ({
      config: {
        agents: { defaults: { model } },
        channels: { sendToolHints: false, showReasoning: false },
        gateway: { host: '127.0.0.1', port },
      },
    }) as unknown as LoadedConfig;
  const fakeAgent = (name: string, events: string[]) =>
    ({
      loop: { name },
      model: { model: name },
      provider: { name: 'p' },
      mcp: { close: async () => void events.push(`mcp closed ${name}`) },
      shutdown: async () => void events.push(`shutdown ${name}`),
    }) as unknown as Agent;

  function harness(next: () => Promise<LoadedConfig>, replaced = true) {
    const events: string[] = [];
    let loaded = config('m1');
    let agent = fakeAgent('a1', events);
    const target: ReloadTarget = {
      loaded: () => loaded,
      agent: () => agent,
      setLoaded: (value) => {
        loaded = value;
      },
      replaceAgent: (fresh) => {
        events.push('replaced');
        agent = fresh;
      },
    };
    const { log, lines } = recordingLog();
    let closing = false;
    let built = 0;
    const reload = configReloader({
      target,
      reloadConfig: next,
      buildAgent: async () => fakeAgent(`a${++built + 1}`, events),
      dispatcher: {
        replaceLoop: async () => replaced,
        updateSettings: () => events.push('settings'),
      },
      closing: () => closing,
      onReload: () => void events.push('listener'),
      log,
    });
    return { reload, events, lines, target, close: () => (closing = true) };
  }

  it('a gateway-only edit keeps the agent; an agent edit swaps it and closes the old MCP servers', async () => {
    let nextConfig = config('m1', 19000);
    const h = harness(async () => nextConfig);
    expect(await h.reload()).toBe(true);
    expect(h.events).toEqual(['settings', 'listener']);
    expect(h.lines.some((line) => line.includes('gateway.host/port changes apply after a restart'))).toBe(true);
    nextConfig = config('m2', 19000);
    h.events.length = 0;
    expect(await h.reload()).toBe(true);
    expect(h.events).toEqual(['mcp closed a1', 'replaced', 'settings', 'listener']);
    expect(h.target.agent().model.model).toBe('a2');
  });

  it('an unreadable config or a refused swap leaves the previous config and agent', async () => {
    const bad = harness(async () => {
      throw new Error('bad json');
    });
    expect(await bad.reload()).toBe(false);
    expect(bad.lines.at(-1)).toMatch(/config edit ignored, still running the previous config: bad json/);
    const refused = harness(async () => config('m2'), false);
    expect(await refused.reload()).toBe(false);
    expect(refused.events).toEqual(['shutdown a2']);
    expect(refused.target.agent().model.model).toBe('a1');
    expect(refused.target.loaded().config.agents.defaults.model).toBe('m1');
  });

  it('does nothing once the gateway is closing; reloads run one at a time', async () => {
    const started: string[] = [];
    const first = gate();
    let calls = 0;
    const h = harness(async () => {
      const n = ++calls;
      started.push(`read ${n}`);
      if (n === 1) await first.opened;
      return config('m1');
    });
    const one = h.reload();
    const two = h.reload();
    await Promise.resolve();
    expect(started).toEqual(['read 1']);
    first.open();
    expect(await one).toBe(true);
    expect(await two).toBe(true);
    expect(started).toEqual(['read 1', 'read 2']);
    h.close();
    expect(await h.reload()).toBe(false);
    expect(calls).toBe(2);
  });

  it('agentSettingsChanged ignores channels and gateway', () => {
    const a = config('m1');
    const b = {
      config: { ...a.config, channels: { sendToolHints: true }, gateway: { port: 1 } },
    } as unknown as LoadedConfig;
    expect(agentSettingsChanged(a, b)).toBe(false);
    expect(agentSettingsChanged(a, config('m2'))).toBe(true);
  });
});

describe('messageTargetsOf', () => {
  const channel = (name: string, admitsChat?: Channel['admitsChat']) =>
    ({ name, ...(admitsChat ? { admitsChat } : {}) }) as Channel;

  it('asks the named channel; an unknown channel or one without a rule is refused with the reason', () => {
    const check = messageTargetsOf([
      channel('telegram', (chatId) => (chatId === '42' ? { ok: true } : { ok: false, why: 'not allowed' })),
      channel('cli'),
    ]);
    expect(check('telegram', '42')).toEqual({ ok: true });
    expect(check('telegram', '7')).toEqual({ ok: false, why: 'not allowed' });
    expect(check('cli', 'x')).toEqual({ ok: false, why: 'cli takes messages only in the current chat' });
    expect(check('slack', 'x')).toEqual({
      ok: false,
      why: 'no channel "slack" runs in this gateway (running: telegram, cli)',
    });
    expect(messageTargetsOf([])('slack', 'x')).toEqual({
      ok: false,
      why: 'no channel "slack" runs in this gateway (running: none)',
    });
  });
});

describe('startServices', () => {
  it('a service that throws on start is logged and the others still start', () => {
    const started: string[] = [];
    const { log, lines } = recordingLog();
    startServices(
      [
        { name: 'cron', start: () => void started.push('cron'), stop: async () => {} },
        {
          name: 'broken',
          start: () => {
            throw new Error('no');
          },
          stop: async () => {},
        },
        {
          start: () => {
            throw new Error('anon');
          },
          stop: async () => {},
        },
        { name: 'heartbeat', start: () => void started.push('heartbeat'), stop: async () => {} },
      ],
      log,
    );
    expect(started).toEqual(['cron', 'heartbeat']);
    expect(lines).toEqual([
      'error gateway: service broken did not start: no',
      'error gateway: service (unnamed) did not start: anon',
    ]);
  });
});

describe('healthReport', () => {
  it('reports the live agent and each channel state, with the details alongside', () => {
    const details = {
      telegram: { state: 'running', reconnects: 0 },
      discord: { state: 'reconnecting', reconnects: 2, lastError: 'closed' },
    } as unknown as Parameters<typeof healthReport>[1];
    const agent = { provider: { name: 'openrouter' }, model: { model: 'm1' } } as unknown as Agent;
    expect(healthReport(agent, details)).toEqual({
      provider: 'openrouter',
      model: 'm1',
      channels: { telegram: 'running', discord: 'reconnecting' },
      channelDetails: details,
    });
  });
});
