/**
 * What the dispatcher tells a channel about the end of a turn: the reply carries `_turn_end`, a failed model request
 * carries a `_turn_error` with a hint naming the provider's setting, command output is marked plain text, and a turn
 * with no reply still ends for clients that follow turns (`_wants_events`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MessageBus } from '../../src/bus/message-bus.js';
import type { OutboundMessage } from '../../src/bus/types.js';
import { OutboundRouter } from '../../src/channels/router.js';
import { Dispatcher } from '../../src/gateway/dispatcher.js';
import type { LLMResponse } from '../../src/providers/types.js';
import { eventually } from '../helpers/eventually.js';
import { LatencyProvider, makeLoop } from './helpers.js';
import { TestChannel } from './test-channel.js';

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

async function gateway(reply: (marker: string) => Partial<LLMResponse>, delay = (_marker: string) => 5) {
  const provider = new LatencyProvider(delay, reply);
  const { loop } = await makeLoop(provider);
  const bus = new MessageBus();
  const channel = new TestChannel();
  await channel.start(bus);
  const dispatcher = new Dispatcher({ bus, loop, maxConcurrent: 2, providerName: () => 'openai' });
  const router = new OutboundRouter({ bus, channels: [channel] });
  dispatcher.start();
  router.start();
  stop = async () => {
    await dispatcher.drain(1_000);
    await router.stop(100);
  };
  const send = (content: string, metadata?: Record<string, unknown>) =>
    bus.publishInbound({
      channel: channel.name,
      senderId: 'u',
      chatId: 'c1',
      content,
      ...(metadata ? { metadata } : {}),
    });
  return { channel, send, provider };
}

const ended = (m: OutboundMessage) => m.metadata?._turn_end === true;

describe('Dispatcher: the end of a turn', () => {
  it('marks the reply as the turn’s end', async () => {
    const { channel, send } = await gateway((marker) => ({ content: `reply ${marker}` }));
    send('msg:a');
    const reply = await channel.waitFor(ended);
    expect(reply.content).toBe('reply a');
  });

  it('reports a provider failure as a turn error with a fix hint', async () => {
    const { channel, send } = await gateway(() => ({
      finishReason: 'error',
      error: { kind: 'auth', message: 'invalid x-api-key', status: 401, retryable: false },
    }));
    send('msg:a');
    const reply = await channel.waitFor(ended);
    expect(reply.metadata?._turn_error).toEqual({
      kind: 'auth',
      message: 'invalid x-api-key',
      hint: expect.stringContaining('providers.openai.apiKey'),
    });
    // Chat apps get the same as text, hint included.
    expect(reply.content).toMatch(
      /^Sorry, the model request failed \(auth\): invalid x-api-key\nCheck providers\.openai\.apiKey/,
    );
  });

  it('marks command output as plain text; with no turn running, a command is the whole turn and ends it', async () => {
    const { channel, send } = await gateway(() => ({ content: 'unused' }));
    send('/help');
    const reply = await channel.waitFor(ended);
    expect(reply.content).toMatch(/^Commands:/);
    expect(reply.metadata?.render_as).toBe('text');
    send('/status');
    const status = await channel.waitFor((m) => m.content.includes('Active turn: no'));
    expect(ended(status)).toBe(true);
  });

  it.each([true, false])(
    'a turn stopped with no reply still ends for a client that follows turns (%s); /status beside it does not end it',
    async (follows) => {
      // The model call would take 30 s: only /stop ends it.
      const { channel, send, provider } = await gateway(
        (marker) => ({ content: `reply ${marker}` }),
        (marker) => (marker === 'slow' ? 30_000 : 5),
      );
      const metadata = follows ? { _wants_events: true } : undefined;
      send('msg:slow', metadata);
      await eventually(() => provider.calls.length > 0);
      send('/status', metadata);
      const status = await channel.waitFor((m) => m.content.includes('Active turn: yes'));
      expect(ended(status)).toBe(false);
      send('/stop', metadata);
      const stopped = await channel.waitFor((m) => m.content.startsWith('Stopped'));
      expect(ended(stopped)).toBe(false);
      const markers = () => channel.sent.filter((m) => ended(m) && m.content === '');
      if (follows) await channel.waitFor((m) => ended(m) && m.content === '');
      expect(markers()).toHaveLength(follows ? 1 : 0);
    },
  );
});
