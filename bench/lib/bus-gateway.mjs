// The gateway without its channels, in a process of its own: N sessions × T turns through bus → dispatcher →
// AgentLoop (JSONL session files on disk, or in memory) against an in-process provider with a fixed latency. Prints
// one JSON line: overheads above the latency, peak RSS, lost and reordered replies.
// Usage: node bench/lib/bus-gateway.mjs <sessions> <turns> <latencyMs> [--memory-sessions] [--think=MS]
//        [--bundle=PATH] (the modules below, already bundled by bundleFromSource; else bundled here)
// --think=MS: each user pauses MS between a reply and the next message, and the first messages spread over MS;
// without it every session fires back-to-back in lockstep (the worst case: bursts of N turns at once).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUS_GATEWAY_MODULES, loadFromSource } from './load-src.mjs';

const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const [sessions, turns, latencyMs] = process.argv
  .slice(2)
  .filter((a) => !a.startsWith('--'))
  .map(Number);
const memorySessions = flags.includes('--memory-sessions');
const thinkMs = Number(flags.find((f) => f.startsWith('--think='))?.slice('--think='.length) ?? 0);
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const scratch = mkdtempSync(join(tmpdir(), 'nb-bus-gateway-'));

const bundle = flags.find((f) => f.startsWith('--bundle='))?.slice('--bundle='.length);
const m = bundle ? await import(pathToFileURL(bundle).href) : await loadFromSource(BUS_GATEWAY_MODULES, 'bus-gateway');

/** Answers `echo <id>` after latencyMs, like a model that takes that long. */
const provider = {
  name: 'bench',
  stream(request) {
    const stream = new m.EventStream();
    const last = String(request.messages.filter((msg) => msg.role === 'user').at(-1)?.content ?? '');
    const id = /(s\d+-t\d+)/.exec(last)?.[1] ?? '?';
    setTimeout(() => {
      stream.end({
        content: `echo ${id}`,
        toolCalls: [],
        finishReason: 'stop',
        usage: { promptTokens: 1, completionTokens: 1 },
      });
    }, latencyMs);
    return stream;
  },
};

/** The loop's persistence contract without the disk: structured clones in a Map. */
function memoryStore() {
  const saved = new Map();
  const keep = async (session) => {
    saved.set(session.key, structuredClone(session));
  };
  return {
    load: async (key) => structuredClone(saved.get(key) ?? m.newSession(key)),
    save: keep,
    rewrite: keep,
    list: async () => [],
    delete: async (key) => {
      saved.delete(key);
    },
  };
}

const runner = new m.AgentRunner({
  provider,
  model: 'bench',
  maxTokens: 100,
  tools: new m.ToolRegistry(),
  maxIterations: 3,
});
const store = memorySessions ? memoryStore() : new m.JsonlSessionStore(join(scratch, 'sessions'));
const loop = new m.AgentLoop({
  sessions: store,
  context: new m.ContextBuilder({ workspace: join(scratch, 'ws') }),
  runner,
});
const bus = new m.MessageBus();
const dispatcher = new m.Dispatcher({ bus, loop, maxConcurrent: sessions });
dispatcher.start();

const received = new Map();
const sentAt = new Map();
const waiting = new Map();
const latencies = [];
void (async () => {
  for (;;) {
    const out = await bus.consumeOutbound();
    const list = received.get(out.chatId) ?? [];
    list.push(out.content);
    received.set(out.chatId, list);
    const sent = sentAt.get(`${out.chatId}/${list.length - 1}`);
    if (sent !== undefined) latencies.push(performance.now() - sent);
    waiting.get(out.chatId)?.();
  }
})();

const started = performance.now();
await Promise.all(
  Array.from({ length: sessions }, async (_, i) => {
    const chat = `s${i}`;
    if (thinkMs > 0) await pause(Math.random() * thinkMs);
    for (let turn = 0; turn < turns; turn++) {
      if (turn > 0 && thinkMs > 0) await pause(thinkMs);
      const reply = new Promise((resolve) => waiting.set(chat, resolve));
      sentAt.set(`${chat}/${turn}`, performance.now());
      bus.publishInbound({ channel: 'bench', senderId: 'u', chatId: chat, content: `bench ${chat}-t${turn}` });
      await reply;
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
let lost = 0;
let reordered = 0;
for (let i = 0; i < sessions; i++) {
  const replies = received.get(`s${i}`) ?? [];
  lost += Math.max(0, turns - replies.length);
  replies.forEach((reply, turn) => {
    if (reply !== `echo s${i}-t${turn}`) reordered += 1;
  });
}
await dispatcher.drain(1000);
rmSync(scratch, { recursive: true, force: true });
const overheads = latencies.map((ms) => ms - latencyMs);
process.stdout.write(
  `${JSON.stringify({ overheads, lost, reordered, seconds, peakRssKb: process.resourceUsage().maxRSS })}\n`,
);
process.exit(0);
