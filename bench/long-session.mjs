// Long-session benchmark: building a turn's request and saving a turn, for sessions of 100 / 1,000 / 10,000 messages.
// Usage: node bench/long-session.mjs [runs=7]
// (a) load + slice from lastConsolidated + model copy + ContextBuilder.buildMessages, as the loop's build step does:
//     cold (a new store parses the file) and warm (the store's cache, as on every turn after the first).
// (b) one turn's saves as the loop makes them (user message, checkpoints around one tool, the tool round, the final
//     answer) and the bytes they write; the full-rewrite columns are the same saves with rewrite() (the old behaviour).
// The TypeScript sources are bundled on the fly with esbuild (no `npm run build` needed).
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadFromSource } from './load-src.mjs';

const _root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.argv[2] ?? 7);
const sizes = [100, 1_000, 10_000];
const scratch = mkdtempSync(join(tmpdir(), 'nb-session-bench-'));

async function loadModules() {
  return loadFromSource(
    [
      "export { JsonlSessionStore } from './src/session/jsonl-store.js';",
      "export { ContextBuilder } from './src/agent/context.js';",
    ],
    'long-session',
  );
}

const WORDS = 'the agent reads a file runs a command and answers with what it found in the workspace today'.split(' ');
let seed = 1;
function text(bytes) {
  let out = '';
  while (out.length < bytes) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    out += `${WORDS[seed % WORDS.length]} `;
  }
  return out.slice(0, bytes);
}

let callId = 0;
const toolCall = (name, args) => ({
  id: `call_${++callId}`,
  type: 'function',
  function: { name, arguments: JSON.stringify(args) },
});
const at = () => new Date().toISOString();

/** One realistic exchange of five messages: a question, two parallel tool calls with results of a few KB, an answer. */
function exchange() {
  const calls = [toolCall('read_file', { path: `src/${text(20).trim()}.ts` }), toolCall('exec', { command: text(60) })];
  return [
    { role: 'user', content: text(300), timestamp: at() },
    { role: 'assistant', content: text(120), tool_calls: calls, timestamp: at() },
    { role: 'tool', tool_call_id: calls[0].id, name: 'read_file', content: text(3_500), timestamp: at() },
    { role: 'tool', tool_call_id: calls[1].id, name: 'exec', content: text(1_500), timestamp: at() },
    { role: 'assistant', content: text(900), timestamp: at() },
  ];
}

/** Mirrors AgentLoop's build step: the history the model sees is the unconsolidated tail without timestamps. */
function buildRequest(session, context) {
  const user = context.buildUserMessage('and what about the next file?', { channel: 'cli', chatId: 'direct' });
  const history = session.messages.slice(session.lastConsolidated).map(({ timestamp: _t, ...rest }) => rest);
  return { request: context.buildMessages(history, user), user };
}

/** Mirrors one AgentLoop turn with one tool round; returns the bytes written (whole file when it was replaced). */
async function playTurn(store, session, user, write) {
  const path = store.pathFor(session.key);
  let bytes = 0;
  const persist = async () => {
    const before = statSync(path);
    await write(session);
    const after = statSync(path);
    bytes += after.ino === before.ino ? after.size - before.size : after.size;
  };
  const [, assistant, result] = exchange();
  session.messages.push({ ...user, timestamp: at() });
  session.metadata.pending_user_turn = true;
  session.metadata.last_channel = 'cli:direct';
  await persist();
  session.metadata.runtime_checkpoint = { assistant, completed: [], pending: assistant.tool_calls };
  await persist();
  session.metadata.runtime_checkpoint = { assistant, completed: [result], pending: [] };
  await persist();
  session.messages.push(assistant, result);
  delete session.metadata.runtime_checkpoint;
  await persist();
  session.messages.push({ role: 'assistant', content: text(900), timestamp: at() });
  delete session.metadata.pending_user_turn;
  await persist();
  return bytes;
}

async function measure(fn) {
  await fn(); // warm-up (JIT, page cache), not counted
  const samples = [];
  for (let i = 0; i < runs; i++) samples.push(await fn());
  return samples;
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const timed = async (fn) => {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
};

const { JsonlSessionStore, ContextBuilder } = await loadModules();
const workspace = join(scratch, 'ws');
mkdirSync(workspace);
const context = new ContextBuilder({ workspace });
const rows = [];

for (const size of sizes) {
  const dir = join(scratch, `sessions-${size}`);
  const key = `bench:${size}`;
  const store = new JsonlSessionStore(dir);
  const seeded = await store.load(key);
  while (seeded.messages.length < size) seeded.messages.push(...exchange());
  await store.save(seeded);
  const fileBytes = statSync(store.pathFor(key)).size;

  const cold = await measure(async () => {
    const { ms } = await timed(async () => buildRequest(await new JsonlSessionStore(dir).load(key), context));
    return ms;
  });
  const warm = await measure(async () => {
    const { ms } = await timed(async () => buildRequest(await store.load(key), context));
    return ms;
  });
  const appendTurns = await measure(async () => {
    const session = await store.load(key);
    const { user } = buildRequest(session, context);
    return timed(() => playTurn(store, session, user, (s) => store.save(s)));
  });
  const rewriteTurns = await measure(async () => {
    const session = await store.load(key);
    const { user } = buildRequest(session, context);
    return timed(() => playTurn(store, session, user, (s) => store.rewrite(s)));
  });
  const copy = await store.load(key);
  const cloneMs = median(await measure(async () => (await timed(async () => structuredClone(copy))).ms));
  rows.push({
    size,
    fileMb: fileBytes / 1024 / 1024,
    coldMs: median(cold),
    warmMs: median(warm),
    saveMs: median(appendTurns.map((t) => t.ms)),
    saveBytes: median(appendTurns.map((t) => t.value)),
    rewriteMs: median(rewriteTurns.map((t) => t.ms)),
    rewriteBytes: median(rewriteTurns.map((t) => t.value)),
    cloneMs,
  });
}

const base = rows[0];
const ratio = (value, baseline) => `×${(value / baseline).toFixed(1)}`.padStart(7);
const ms = (value) => `${value.toFixed(2)} ms`.padStart(10);
const kb = (value) => `${(value / 1024).toFixed(1)} KB`.padStart(11);
console.log(`median of ${runs} runs; ratios to the ${base.size}-message session; one turn = 5 saves (1 tool round)`);
console.log(
  'messages   file MB   load+build cold    load+build warm     turn saves (append)    bytes/turn (append)' +
    '    turn saves (rewrite)   bytes/turn (rewrite)',
);
for (const r of rows) {
  console.log(
    [
      String(r.size).padStart(8),
      r.fileMb.toFixed(1).padStart(9),
      `${ms(r.coldMs)}${ratio(r.coldMs, base.coldMs)}`,
      `${ms(r.warmMs)}${ratio(r.warmMs, base.warmMs)}`,
      `   ${ms(r.saveMs)}${ratio(r.saveMs, base.saveMs)}`,
      `   ${kb(r.saveBytes)}${ratio(r.saveBytes, base.saveBytes)}`,
      `    ${ms(r.rewriteMs)}${ratio(r.rewriteMs, base.rewriteMs)}`,
      `   ${kb(r.rewriteBytes)}${ratio(r.rewriteBytes, base.rewriteBytes)}`,
    ].join(' '),
  );
}
const largest = rows.at(-1);
console.log(
  `for comparison: structuredClone of the whole ${largest.size}-message session takes ${largest.cloneMs.toFixed(1)} ms ` +
    '(load hands out a shallow copy instead)',
);
rmSync(scratch, { recursive: true, force: true });
