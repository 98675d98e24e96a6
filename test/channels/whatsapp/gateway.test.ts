/**
 * WhatsApp through the whole gateway (fake LLM) and the loopback WhatsApp: a reconnect in the middle of a burst of 50
 * messages loses none and answers each once: what was on the wire unconfirmed is delivered again (copies Baileys had
 * already decrypted come back through the retry-receipt flow), the second half waits in the server's offline queue.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type LinkedFake, linkedFake } from './harness.js';

const OWNER = '4917011112222';
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The agent answers each message with `re: <its text>`. */
function echoAgent(llm: FakeLLM, count: number) {
  for (let i = 0; i < count; i++) {
    llm.enqueue((body) => {
      const messages = (body.messages ?? []) as { role: string; content: unknown }[];
      const last = [...messages].reverse().find((m) => m.role === 'user');
      const text = JSON.stringify(last?.content ?? '');
      const match = /burst-\d+/.exec(text);
      return { text: `re: ${match?.[0] ?? 'unknown'}` };
    });
  }
}

async function start(linked: LinkedFake, settings: Record<string, unknown> = {}) {
  const llm = await startFakeLLM();
  const files = await writeChannelConfig('whatsapp', llm, { ...linked.settings, allowFrom: [OWNER], ...settings });
  const gateway = await startChannelGateway(files);
  cleanups.push(async () => {
    await gateway.shutdown('test end');
    await llm.close();
  });
  await waitRunning(gateway);
  return { gateway, llm, files };
}

const waitRunning = (gateway: Gateway) =>
  eventually(async () => expect((await healthOf(gateway)).channels.whatsapp).toBe('running'), 15_000);

describe('WhatsApp gateway', () => {
  it('a reconnect in the middle of a 50-message burst: every message answered exactly once', async () => {
    const linked = await linkedFake();
    cleanups.push(() => linked.close());
    const { gateway, llm } = await start(linked);
    echoAgent(llm, 60);
    const owner = linked.phoneOf(OWNER, 'Owner');
    for (let i = 0; i < 25; i++) await owner.says(`burst-${i}`);
    // The connection drops while the first half is still being handled; the second half is written meanwhile.
    linked.fake.drop();
    // At least the last one was still on the wire, unconfirmed, when the connection went: it is delivered again.
    expect(linked.fake.unconfirmedAtDrop).toBeGreaterThan(0);
    for (let i = 25; i < 50; i++) await owner.says(`burst-${i}`);
    linked.fake.restore();
    await eventually(() => expect(new Set(owner.texts()).size).toBe(50), 60_000).catch((err) => {
      throw new Error(`${err} ${JSON.stringify(owner.texts())} fails=${llm.requests.length}`);
    });
    await eventually(async () => expect((await healthOf(gateway)).channels.whatsapp).toBe('running'));
    const answers = owner.texts();
    for (let i = 0; i < 50; i++) expect(answers.filter((a) => a === `re: burst-${i}`)).toHaveLength(1);
    expect(answers).toHaveLength(50);
    expect(linked.fake.errors).toEqual([]);
  }, 90_000);
});
