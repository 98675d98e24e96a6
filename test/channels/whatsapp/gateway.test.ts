/**
 * WhatsApp through the whole gateway (fake LLM) and the loopback WhatsApp: a reconnect in the middle of a burst of 50
 * messages loses none and answers each once: what was on the wire unconfirmed is delivered again (copies Baileys had
 * already decrypted come back through the retry-receipt flow), the second half waits in the server's offline queue.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type LinkedFake, linkedFake, numberOf } from './harness.js';
import { FakeMediaHost } from './media-host.js';

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
  // Under load this lost replies until Baileys' key-store transactions were made to take turns (socket.ts:
  // oneSignalTransactionAtATime). The wait is bounded so a bad run ends early.
  it('a reconnect in the middle of a 50-message burst: every message answered exactly once', {
    timeout: 60_000,
  }, async () => {
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
    await eventually(() => expect(new Set(owner.texts()).size).toBe(50), 25_000).catch((err) => {
      throw new Error(
        `${err} ${JSON.stringify(owner.texts())} asked=${llm.requests.length} phone errors: ${linked.fake.errors.map((e) => e.message).join('; ')}`,
      );
    });
    await eventually(async () => expect((await healthOf(gateway)).channels.whatsapp).toBe('running'));
    const answers = owner.texts();
    for (let i = 0; i < 50; i++) expect(answers.filter((a) => a === `re: burst-${i}`)).toHaveLength(1);
    expect(answers).toHaveLength(50);
    expect(linked.fake.errors).toEqual([]);
  });

  it('a photo: downloaded from the media host, decrypted by Baileys, saved and shown to the model', async () => {
    const linked = await linkedFake();
    cleanups.push(() => linked.close());
    const { llm, files } = await start(linked);
    llm.enqueue({ text: 'A tiny picture.' });
    const owner = linked.phoneOf(OWNER, 'Owner');
    const png = Buffer.from([
      0x89,
      0x50,
      0x4e,
      0x47,
      0x0d,
      0x0a,
      0x1a,
      0x0a,
      ...Array.from({ length: 40 }, (_, i) => i),
    ]);
    await owner.sendsMedia('image', png, { mimetype: 'image/png', caption: 'what is this?' });
    await eventually(() => expect(owner.texts()).toEqual(['A tiny picture.']), 15_000);
    const sent = JSON.stringify(llm.requests.at(-1)?.body.messages);
    expect(sent).toContain('what is this?');
    expect(sent).toContain(`data:image/png;base64,${png.toString('base64')}`);
    const path = /\[image: ([^\]]+)\]/.exec(sent)?.[1] ?? '';
    expect(path.startsWith(join(files.dataDir, 'media', 'whatsapp'))).toBe(true);
    expect(readFileSync(path)).toEqual(png);
    expect(linked.fake.mediaRequests).toHaveLength(1);
    expect(linked.fake.errors).toEqual([]);
  }, 30_000);

  it('a voice note and a document: saved under the media folder, their paths given to the model', async () => {
    const linked = await linkedFake();
    cleanups.push(() => linked.close());
    const { llm, files } = await start(linked);
    llm.enqueue({ text: 'Heard you.' }, { text: 'Read it.' });
    const owner = linked.phoneOf(OWNER, 'Owner');
    const voice = Buffer.from('OggS fake opus voice note bytes');
    await owner.sendsMedia('audio', voice, { mimetype: 'audio/ogg; codecs=opus', ptt: true });
    await eventually(() => expect(owner.texts()).toEqual(['Heard you.']), 15_000);
    const report = Buffer.from('quarterly numbers: 42\n');
    await owner.sendsMedia('document', report, {
      mimetype: 'text/plain',
      fileName: 'report.txt',
      caption: 'summarise',
    });
    await eventually(() => expect(owner.texts()).toEqual(['Heard you.', 'Read it.']), 15_000);
    // Each turn's newest `[file: …]` line (the second turn also carries the first one in its history).
    const paths = llm.requests.map(
      (request) => [...JSON.stringify(request.body.messages).matchAll(/\[file: ([^\]]+)\]/g)].at(-1)?.[1] ?? '',
    );
    const [voicePath, docPath] = paths;
    for (const path of [voicePath, docPath])
      expect(path?.startsWith(join(files.dataDir, 'media', 'whatsapp'))).toBe(true);
    expect(readFileSync(voicePath ?? '')).toEqual(voice);
    expect(docPath?.endsWith('report.txt')).toBe(true);
    expect(readFileSync(docPath ?? '')).toEqual(report);
    expect(JSON.stringify(llm.requests.at(-1)?.body.messages)).toContain('summarise');
    expect(linked.fake.errors).toEqual([]);
  }, 30_000);

  it('groupPolicy "mention": a group message @mentioning the bot is answered in the group, one without is not', async () => {
    const linked = await linkedFake();
    cleanups.push(() => linked.close());
    const { llm } = await start(linked, { groupPolicy: 'mention' });
    const group = '120363000000000001@g.us';
    linked.fake.groups.set(group, { subject: 'Family', members: [numberOf(OWNER)] });
    llm.enqueue({ text: 'It is **4**.' });
    const owner = linked.phoneOf(OWNER, 'Owner');
    await owner.says('just chatting among humans', { group });
    await owner.says('what is 2+2?', { group, mention: true });
    // Messages are handled in order: once the mention is answered, the one before it was seen and passed over.
    await eventually(() => expect(owner.texts(group)).toEqual(['It is *4*.']), 20_000);
    expect(llm.requests).toHaveLength(1);
    const sent = JSON.stringify(llm.requests[0]?.body.messages);
    expect(sent).toContain('what is 2+2?');
    expect(sent).not.toContain(`@${linked.fake.phone}`);
    expect(sent).not.toContain('just chatting among humans');
    // Sent to the group (one sender-key message), not to the owner's own chat.
    expect(owner.texts()).toEqual([]);
    expect(linked.fake.errors).toEqual([]);
  }, 40_000);

  it('shows "typing…" (a composing chat state) in the chat while the turn runs', async () => {
    const linked = await linkedFake();
    cleanups.push(() => linked.close());
    const { llm } = await start(linked);
    const owner = linked.phoneOf(OWNER, 'Owner');
    const composing = () =>
      linked.fake.log.some(
        (node) =>
          node.tag === 'chatstate' &&
          node.attrs.to === owner.jid &&
          Array.isArray(node.content) &&
          node.content.some((child) => child.tag === 'composing'),
      );
    // The model answers only once the fake has seen the chat state: the turn is running while it is sent.
    llm.enqueue(async () => {
      await eventually(() => expect(composing()).toBe(true), 10_000);
      return { text: 'Done thinking.' };
    });
    await owner.says('think hard');
    await eventually(() => expect(owner.texts()).toEqual(['Done thinking.']), 20_000);
    expect(linked.fake.errors).toEqual([]);
  }, 30_000);

  it('sends files from the message tool: a photo and a document, encrypted and uploaded over https, readable by the phone', async () => {
    const linked = await linkedFake();
    cleanups.push(() => linked.close());
    const host = await FakeMediaHost.start();
    const untrust = host.trust();
    cleanups.push(async () => {
      untrust();
      await host.close();
    });
    linked.fake.mediaHost = host.hostname;
    const { llm, files } = await start(linked);
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 9, 8, 7, 6]);
    writeFileSync(join(files.workspace, 'chart.png'), png);
    writeFileSync(join(files.workspace, 'report.txt'), 'quarterly numbers');
    llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'Here you are.', media: ['chart.png', 'report.txt'] } }] },
      { text: 'Sent them.' },
    );
    const owner = linked.phoneOf(OWNER, 'Owner');
    await owner.says('the chart and the report, please');
    await eventually(() => expect(owner.texts()).toContain('Sent them.'), 30_000);
    const messages = (linked.fake.sent.get(owner.jid) ?? []).map((m) => m.message);
    const image = messages.find((m) => m.imageMessage)?.imageMessage;
    const document = messages.find((m) => m.documentMessage)?.documentMessage;
    expect(image?.mimetype).toBe('image/png');
    expect(await host.decrypt(image ?? {}, 'image')).toEqual(png);
    expect(document?.fileName).toBe('report.txt');
    expect((await host.decrypt(document ?? {}, 'document')).toString()).toBe('quarterly numbers');
    expect(owner.texts()).toContain('Here you are.');
    expect(linked.fake.errors).toEqual([]);
  }, 45_000);
});
