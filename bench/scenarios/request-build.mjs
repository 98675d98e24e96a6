// Time to build a request for sessions of 100 / 1,000 / 10,000 messages, in process (TypeScript bundled on the fly).
// Ours: the real AgentLoop (restore → command → build, the user message saved first) with a provider stub that notes
// when the request reaches it; no consolidator, so all messages after lastConsolidated = 0 are sent. Cold = a new
// session store (the file is parsed: the first turn after a start); warm = the same store (every later turn).
// Peer nanobot: what its loop does before calling the model (session load, buildMessages over its last 200 messages).
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadFromSource } from '../lib/load-src.mjs';
import { scratchDir } from '../lib/scratch.mjs';
import { Figure, formatValue } from '../lib/stats.mjs';
import { exchange, WORDS_NOTE } from './session-data.mjs';

const SIZES = [100, 1_000, 10_000];

export async function requestBuild(ctx) {
  ctx.report.section('Request build for long sessions (in process)');
  const runs = ctx.cheapRuns;
  const m = await loadFromSource(
    [
      "export { JsonlSessionStore } from './src/session/jsonl-store.js';",
      "export { ContextBuilder } from './src/agent/context.js';",
      "export { AgentLoop } from './src/agent/loop.js';",
      "export { AgentRunner } from './src/agent/runner.js';",
      "export { ToolRegistry } from './src/tools/registry.js';",
      "export { EventStream } from './src/util/event-stream.js';",
    ],
    'request-build',
  );
  const peer = ctx.agents.find((a) => a.id === 'nanobot');
  const peerLib = peer ? await import(pathToFileURL(peer.library).href) : undefined;
  for (const size of SIZES) {
    const messages = [];
    while (messages.length < size) messages.push(...exchange());
    const ours = await measureOurs(m, messages, runs);
    const cold = new Figure(`request-build/${size}/cold/ours`, 'ms', ours.cold, {
      note: `session file ${formatValue(ours.fileBytes / 1024 / 1024, 'MB')}`,
    });
    const warm = new Figure(`request-build/${size}/warm/ours`, 'ms', ours.warm);
    const rest = new Figure(`turn-save/${size}/ours`, 'ms', ours.rest, { note: 'reply → turn saved' });
    if (peerLib) {
      const theirs = measurePeer(peerLib, messages, runs);
      const peerCold = new Figure(`request-build/${size}/cold/nanobot`, 'ms', theirs.cold, {
        note: `sends its last ${theirs.sent} messages`,
      });
      const peerWarm = new Figure(`request-build/${size}/warm/nanobot`, 'ms', theirs.warm);
      cold.compare('nanobot', peerCold);
      warm.compare('nanobot', peerWarm);
      for (const f of [cold, warm, rest, peerCold, peerWarm]) ctx.report.add(f);
    } else for (const f of [cold, warm, rest]) ctx.report.add(f);
  }
  if (!peerLib) ctx.report.note('nanobot peer not measured (not installed or --no-peers)');
  ctx.report.note(`OpenClaw keeps sessions in SQLite behind its gateway: not measurable in process. ${WORDS_NOTE}`);
}

/** A provider that answers at once and notes when each request reached it. */
function stubProvider(EventStream, onRequest) {
  return {
    name: 'bench',
    stream() {
      onRequest(performance.now());
      const stream = new EventStream();
      queueMicrotask(() =>
        stream.end({
          content: 'ok',
          toolCalls: [],
          finishReason: 'stop',
          usage: { promptTokens: 1, completionTokens: 1 },
        }),
      );
      return stream;
    },
  };
}

async function measureOurs(m, messages, runs) {
  const dir = scratchDir('sessions');
  const workspace = scratchDir('workspace');
  const key = `bench:${messages.length}`;
  const seedStore = new m.JsonlSessionStore(dir);
  const seeded = await seedStore.load(key);
  seeded.messages.push(...messages);
  await seedStore.save(seeded);
  let requestAt = 0;
  const runner = new m.AgentRunner({
    provider: stubProvider(m.EventStream, (t) => {
      requestAt = t;
    }),
    model: 'bench',
    maxTokens: 100,
    tools: new m.ToolRegistry(),
    maxIterations: 3,
  });
  const context = new m.ContextBuilder({ workspace });
  const loopOn = (store) => new m.AgentLoop({ sessions: store, context, runner });
  const turn = async (loop) => {
    const start = performance.now();
    await loop.processMessage({ channel: 'cli', chatId: 'direct', content: 'and the next file?', sessionKey: key });
    return { build: requestAt - start, rest: performance.now() - requestAt };
  };
  const warmLoop = loopOn(new m.JsonlSessionStore(dir));
  await turn(warmLoop); // fills the store's cache (and the JIT)
  const cold = [];
  const warm = [];
  const rest = [];
  for (let i = 0; i < runs; i++) {
    cold.push((await turn(loopOn(new m.JsonlSessionStore(dir)))).build);
    const t = await turn(warmLoop);
    warm.push(t.build);
    rest.push(t.rest);
  }
  return { cold, warm, rest, fileBytes: statSync(seedStore.pathFor(key)).size };
}

/** The peer's steps before a model call; its SessionManager lives in $HOME/.nanobot/sessions, read at construction. */
function measurePeer(lib, messages, runs) {
  const home = scratchDir('nanobot-lib-home');
  const workspace = join(home, 'workspace');
  mkdirSync(workspace, { recursive: true });
  const savedHome = process.env.HOME;
  const manager = () => {
    process.env.HOME = home;
    try {
      return new lib.SessionManager(workspace);
    } finally {
      process.env.HOME = savedHome;
    }
  };
  const key = `bench:${messages.length}`;
  const seed = manager();
  const session = seed.getOrCreate(key);
  session.history.push(...messages.map(({ timestamp: _t, ...rest }) => rest));
  seed.save(session);
  const context = new lib.ContextBuilder(workspace);
  let sent = 0;
  const build = (sessions) => {
    const start = performance.now();
    const history = sessions.getOrCreate(key).getHistory();
    const request = context.buildMessages({
      channel: 'cli',
      chatId: 'direct',
      currentMessage: 'and the next file?',
      history,
    });
    sent = request.length - 2;
    return performance.now() - start;
  };
  // Its ContextBuilder prints a line per build ("Skills always-loaded: …"): muted while measuring.
  const log = console.log;
  console.log = () => {};
  try {
    const warmManager = manager();
    build(warmManager);
    const cold = [];
    const warm = [];
    for (let i = 0; i < runs; i++) {
      cold.push(build(manager()));
      warm.push(build(warmManager));
    }
    return { cold, warm, sent };
  } finally {
    console.log = log;
  }
}
