// Gateway benchmark: N concurrent sessions × T turns through the bus → dispatcher → AgentLoop (real session files on
// disk) against an in-process fake provider with a fixed latency. Each session sends its next message after the
// previous reply (a conversation), so per-turn overhead = reply time − send time − the LLM latency.
// Usage: node bench/gateway.mjs [sessions=1000] [turns=5] [latencyMs=200] [maxConcurrent=1000] [--memory-sessions]
//        [--think=MS]
// --memory-sessions swaps the JSONL store for an in-memory one, to separate dispatch overhead from session disk I/O.
// --think=MS gives each user a pause of MS between a reply and their next message, and spreads the first messages
// over MS (users do not all type at the same instant). Without it every session fires back-to-back in lockstep: 1,000
// turns arrive in the same millisecond, 5 times over — the worst case, where p99 is the time to work off one burst.
// maxConcurrent defaults to 1000 (the gateway's default is NANOBOT_MAX_CONCURRENT_REQUESTS=3, which would measure the
// limit, not the overhead). The TypeScript sources are bundled on the fly with esbuild (no build step needed).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadFromSource } from './load-src.mjs';

const _root = join(dirname(fileURLToPath(import.meta.url)), '..');
const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const [sessions = 1000, turns = 5, latencyMs = 200, maxConcurrent = 1000] = process.argv
  .slice(2)
  .filter((a) => !a.startsWith('--'))
  .map(Number);
const memorySessions = flags.includes('--memory-sessions');
const thinkMs = Number(flags.find((f) => f.startsWith('--think='))?.slice('--think='.length) ?? 0);
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const scratch = mkdtempSync(join(tmpdir(), 'nb-gateway-bench-'));

async function loadModules() {
  return loadFromSource(
    [
      "export { MessageBus } from './src/bus/message-bus.js';",
      "export { Dispatcher } from './src/gateway/dispatcher.js';",
      "export { AgentLoop } from './src/agent/loop.js';",
      "export { AgentRunner } from './src/agent/runner.js';",
      "export { ContextBuilder } from './src/agent/context.js';",
      "export { JsonlSessionStore } from './src/session/jsonl-store.js';",
      "export { newSession } from './src/session/types.js';",
      "export { ToolRegistry } from './src/tools/registry.js';",
      "export { EventStream } from './src/util/event-stream.js';",
    ],
    'gateway',
  );
}

/** Answers `echo <text>` after `latencyMs`, like a model that takes that long. */
function fakeProvider(EventStream) {
  return {
    name: 'bench',
    stream(request) {
      const stream = new EventStream();
      const users = request.messages.filter((m) => m.role === 'user');
      const last = String(users.at(-1)?.content ?? '');
      const text = /(s\d+-t\d+)/.exec(last)?.[1] ?? '?';
      setTimeout(() => {
        stream.end({
          content: `echo ${text}`,
          toolCalls: [],
          finishReason: 'stop',
          usage: { promptTokens: 10, completionTokens: 5 },
        });
      }, latencyMs);
      return stream;
    },
  };
}

/** Keeps sessions as structured clones in a Map: the loop's persistence contract without the disk. */
function memoryStore(newSession) {
  const saved = new Map();
  return {
    async load(key) {
      return structuredClone(saved.get(key) ?? newSession(key));
    },
    async save(session) {
      saved.set(session.key, structuredClone(session));
    },
    async rewrite(session) {
      saved.set(session.key, structuredClone(session));
    },
  };
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const m = await loadModules();
  const workspace = join(scratch, 'workspace');
  const sessionsStore = memorySessions ? memoryStore(m.newSession) : new m.JsonlSessionStore(join(scratch, 'sessions'));
  const runner = new m.AgentRunner({
    provider: fakeProvider(m.EventStream),
    model: 'bench',
    maxTokens: 100,
    tools: new m.ToolRegistry(),
    maxIterations: 3,
  });
  const loop = new m.AgentLoop({ sessions: sessionsStore, context: new m.ContextBuilder({ workspace }), runner });
  const bus = new m.MessageBus();
  const dispatcher = new m.Dispatcher({ bus, loop, maxConcurrent });
  dispatcher.start();

  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 20);

  const received = new Map(); // chatId → replies in order
  const sentAt = new Map(); // "chat/turn" → time sent
  const overheads = [];
  const waiting = new Map(); // chatId → resolve of the pending reply
  const send = (chat, turn) => {
    sentAt.set(`${chat}/${turn}`, performance.now());
    bus.publishInbound({ channel: 'bench', senderId: 'u', chatId: chat, content: `hello ${chat}-t${turn}` });
  };
  void (async () => {
    for (;;) {
      const out = await bus.consumeOutbound();
      const now = performance.now();
      const list = received.get(out.chatId) ?? [];
      list.push(out.content);
      received.set(out.chatId, list);
      const turn = list.length - 1;
      overheads.push(now - (sentAt.get(`${out.chatId}/${turn}`) ?? now) - latencyMs);
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
        send(chat, turn);
        await reply;
      }
    }),
  );
  const elapsedS = (performance.now() - started) / 1000;
  clearInterval(sampler);

  let lost = 0;
  let reordered = 0;
  for (let i = 0; i < sessions; i++) {
    const chat = `s${i}`;
    const replies = received.get(chat) ?? [];
    lost += Math.max(0, turns - replies.length);
    replies.forEach((reply, turn) => {
      if (reply !== `echo ${chat}-t${turn}`) reordered += 1;
    });
  }
  const sorted = overheads.sort((a, b) => a - b);
  const total = sessions * turns;
  console.log(
    `gateway bench: ${sessions} sessions × ${turns} turns, LLM latency ${latencyMs} ms, maxConcurrent ${maxConcurrent}, sessions ${memorySessions ? 'in memory' : 'JSONL on disk'}, ${thinkMs > 0 ? `think time ${thinkMs} ms` : 'lockstep bursts'}`,
  );
  console.log(
    `  turns answered : ${overheads.length}/${total} in ${elapsedS.toFixed(2)} s → ${(total / elapsedS).toFixed(0)} turns/s`,
  );
  console.log(
    `  overhead above LLM latency: p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, max ${sorted.at(-1).toFixed(1)} ms`,
  );
  console.log(`  peak RSS       : ${(peakRss / 1024 / 1024).toFixed(0)} MB`);
  console.log(`  lost ${lost}, reordered ${reordered} → ${lost === 0 && reordered === 0 ? 'OK' : 'FAIL'}`);
  await dispatcher.drain(1000);
  rmSync(scratch, { recursive: true, force: true });
  process.exit(lost === 0 && reordered === 0 ? 0 : 1);
}

await main();
