import { afterEach, describe, expect, it } from 'vitest';
import { MessageBus } from '../../src/bus/message-bus.js';
import type { OutboundMessage } from '../../src/bus/types.js';
import { Dispatcher } from '../../src/gateway/dispatcher.js';
import { eventually } from '../helpers/eventually.js';
import { call } from '../helpers/fake-provider.js';
import { LatencyProvider, makeDispatcher, overlaps } from './helpers.js';

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

async function setup(provider: LatencyProvider, maxConcurrent: number, join = false) {
  const gateway = await makeDispatcher(provider, maxConcurrent, join);
  cleanup = gateway.stop;
  return gateway;
}

describe('Dispatcher', () => {
  it('runs two sessions in parallel while the turns of each session never overlap', async () => {
    const provider = new LatencyProvider(150);
    const { channel } = await setup(provider, 3);
    for (const id of ['a1', 'a2', 'a3']) channel.receive('alice', `msg:${id}`);
    for (const id of ['b1', 'b2', 'b3']) channel.receive('bob', `msg:${id}`);

    expect(await channel.waitForReplies('alice', 3)).toEqual(['reply a1', 'reply a2', 'reply a3']);
    expect(await channel.waitForReplies('bob', 3)).toEqual(['reply b1', 'reply b2', 'reply b3']);

    const alice = provider.callsFor('a');
    const bob = provider.callsFor('b');
    for (const calls of [alice, bob]) {
      for (let i = 1; i < calls.length; i++) expect(calls[i]?.start).toBeGreaterThanOrEqual(calls[i - 1]?.end ?? 0);
    }
    const parallel = alice.some((a) => bob.some((b) => overlaps(a, b)));
    expect(parallel).toBe(true);
  });

  it('/stop cancels a running turn (its model call is aborted, not awaited) and the session stays usable', async () => {
    // The model call would take 30 s: it can only have ended because /stop aborted it.
    const provider = new LatencyProvider((marker) => (marker === 'slow' ? 30_000 : 50));
    const { channel } = await setup(provider, 3);
    channel.receive('alice', 'msg:slow');
    await eventually(() => provider.calls.length > 0);

    channel.receive('alice', '/stop');
    const stopped = await channel.waitFor((m) => m.content.startsWith('Stopped'), 10_000);
    expect(stopped.chatId).toBe('alice');
    const slow = provider.calls[0];
    expect(slow?.aborted).toBe(true);
    expect(slow?.end).toBeGreaterThan(0);

    channel.receive('alice', 'msg:after');
    await channel.waitFor((m) => m.content === 'reply after', 2_000);
    // The cancelled turn says nothing of its own.
    expect(channel.repliesTo('alice')).toEqual([stopped.content, 'reply after']);
  });

  it('holds the concurrency limit', async () => {
    const provider = new LatencyProvider(60);
    const { channel } = await setup(provider, 2);
    const chats = ['c1', 'c2', 'c3', 'c4', 'c5'];
    for (const chat of chats) channel.receive(chat, `msg:${chat}`);
    for (const chat of chats) await channel.waitForReplies(chat, 1);
    expect(provider.peak).toBe(2);
  });

  it('serves waiting sessions round-robin, so a chatty session cannot starve the others', async () => {
    const provider = new LatencyProvider(40);
    const { channel } = await setup(provider, 1);
    channel.receive('alice', 'msg:a1');
    channel.receive('bob', 'msg:b1');
    // Alice keeps talking while Bob waits; Carol arrives last.
    for (const id of ['a2', 'a3', 'a4']) channel.receive('alice', `msg:${id}`);
    channel.receive('carol', 'msg:c1');

    await channel.waitForReplies('alice', 4);
    await channel.waitForReplies('carol', 1);
    // Arrival order would be a1 b1 a2 a3 a4 c1: Carol would wait for all of Alice's backlog.
    expect(provider.calls.map((c) => c.marker)).toEqual(['a1', 'b1', 'c1', 'a2', 'a3', 'a4']);
    expect(provider.peak).toBe(1);
  });

  it('lets a priority command reach a busy session even when every slot is taken', async () => {
    const provider = new LatencyProvider((marker) => (marker === 'slow' ? 30_000 : 20));
    const { channel } = await setup(provider, 1);
    channel.receive('alice', 'msg:slow');
    channel.receive('bob', 'msg:b1');
    await eventually(() => provider.calls.length > 0);
    channel.receive('alice', '/stop@nanobot_bot');
    await channel.waitFor((m) => m.chatId === 'alice' && m.content.startsWith('Stopped'), 10_000);
    // The freed slot goes to Bob.
    await channel.waitFor((m) => m.content === 'reply b1', 2_000);
  });

  it('with joinRunningTurns, does not deliver a message twice when it was folded into the running turn', async () => {
    const provider = new LatencyProvider(100, (marker, request) => {
      const lastUser = request.messages.filter((m) => m.role === 'user').at(-1);
      const injected = JSON.stringify(lastUser?.content).includes('msg:a2');
      if (marker === 'a1') return { toolCalls: [call('echo', { text: 'x' })] };
      return { content: injected ? 'answered a1 and a2' : `reply ${marker}` };
    });
    const { channel } = await setup(provider, 3, true);
    channel.receive('alice', 'msg:a1');
    await eventually(() => provider.calls.length > 0);
    channel.receive('alice', 'msg:a2');
    await channel.waitForReplies('alice', 1);
    // A sentinel instead of a sleep: the session's turns run in order, so a second answer to a2 would come before a3's.
    channel.receive('alice', 'msg:a3');
    await channel.waitFor((m) => m.content === 'reply a3');
    expect(channel.repliesTo('alice')).toEqual(['answered a1 and a2', 'reply a3']);
  });

  it('answers a provider failure with a short error text', async () => {
    const provider = new LatencyProvider(10, () => ({
      finishReason: 'error',
      error: { kind: 'auth', message: 'invalid x-api-key', status: 401, retryable: false },
    }));
    const { channel } = await setup(provider, 3);
    channel.receive('alice', 'msg:a1');
    const [reply] = await channel.waitForReplies('alice', 1);
    expect(reply).toMatch(/^Sorry, the model request failed \(auth\): invalid x-api-key/);
  });

  it('drain stops taking messages, waits for turns in flight and aborts them after the timeout', async () => {
    const provider = new LatencyProvider((marker) => (marker === 'slow' ? 30_000 : 100));
    const { bus, channel, dispatcher } = await setup(provider, 3);
    channel.receive('alice', 'msg:quick');
    channel.receive('bob', 'msg:slow');
    await eventually(() => provider.calls.length >= 2);
    // The slow call would take 30 s: drain returning with it aborted shows the 300 ms timeout, not the call, ended it.
    const result = await dispatcher.drain(300);
    expect(result.aborted).toBe(true);
    expect(channel.repliesTo('alice')).toEqual(['reply quick']);
    expect(provider.calls.find((c) => c.marker === 'slow')?.aborted).toBe(true);

    channel.receive('carol', 'msg:late');
    // Nothing consumes the bus any more: the late message is still there for us to take, and no model saw it.
    const late = await bus.consumeInbound(AbortSignal.timeout(5_000));
    expect(late.content).toBe('msg:late');
    expect(provider.callsFor('late')).toEqual([]);
  });

  it('swaps the loop only between turns', async () => {
    const oldProvider = new LatencyProvider(150, (m) => ({ content: `old ${m}` }));
    const newProvider = new LatencyProvider(10, (m) => ({ content: `new ${m}` }));
    const { channel, dispatcher } = await setup(oldProvider, 3);
    const { loop: next } = await (await import('./helpers.js')).makeLoop(newProvider);
    channel.receive('alice', 'msg:a1');
    await eventually(() => oldProvider.calls.length > 0);
    const swapped = dispatcher.replaceLoop(next);
    channel.receive('bob', 'msg:b1');
    expect(await swapped).toBe(true);
    expect(await channel.waitForReplies('alice', 1)).toEqual(['old a1']);
    expect(await channel.waitForReplies('bob', 1)).toEqual(['new b1']);
  });

  it('accepts messages directly and sends command replies', async () => {
    const bus = new MessageBus();
    const provider = new LatencyProvider(10);
    const { loop } = await (await import('./helpers.js')).makeLoop(provider);
    const dispatcher = new Dispatcher({ bus, loop, maxConcurrent: 1 });
    dispatcher.accept({ channel: 'x', senderId: 'u', chatId: 'c', content: '/help' });
    const reply: OutboundMessage = await bus.consumeOutbound();
    expect(reply).toMatchObject({ channel: 'x', chatId: 'c' });
    expect(reply.content).toContain('/stop');
    expect(provider.calls).toEqual([]);
  });
});
