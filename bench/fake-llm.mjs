// A loopback fake LLM for benchmarks: OpenAI chat completions (SSE when `stream: true`, JSON otherwise) with a
// configurable latency and tool calls. It is stateless, so any number of agents and sessions can share it: each reply
// is derived from the request. The user message that drives a turn carries a directive, `bench <id> tools=<n>`:
// while fewer than n tool results follow that message the fake asks for one more tool call (a listing of "."), then it
// answers `echo <id>`. Requests without a directive (titles, memory consolidation) get "ok".
//
// In-process:   const llm = await startFakeLLM({ latencyMs: 200 }); … llm.url (no /v1) … await llm.close();
// Standalone:   node bench/fake-llm.mjs [--port=0] [--latency=MS] [--record]   (prints "fake-llm <url>" when ready)
//               GET/DELETE <url>/_bench/requests reads / clears the log; POST <url>/_bench/config {latencyMs, record}.
import http from 'node:http';
import { pathToFileURL } from 'node:url';

const DIRECTIVE = /bench (\S+) tools=(\d+)/;
/** Tools that list a directory, in the names the agents use; all take `path`. */
const LISTING_TOOLS = ['list_dir', 'ls', 'list_files', 'list_directory'];

/** @param {{ latencyMs?: number, record?: boolean, port?: number }} options */
export async function startFakeLLM(options = {}) {
  const config = { latencyMs: options.latencyMs ?? 0, record: options.record ?? false };
  /** Every chat request in arrival order: { at (epoch ms), bytes, id, toolRound, body? } (body only when recording). */
  let log = [];
  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `fake LLM: ${err}`, type: 'fake_error' } }));
    });
  });
  server.keepAliveTimeout = 60_000;

  async function handle(req, res) {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const raw = await readBody(req);
    if (url.pathname === '/_bench/requests') {
      if (req.method === 'DELETE') log = [];
      return sendJson(res, 200, req.method === 'DELETE' ? { ok: true } : log);
    }
    if (url.pathname === '/_bench/config' && req.method === 'POST') {
      Object.assign(config, JSON.parse(raw));
      return sendJson(res, 200, config);
    }
    if (req.method === 'GET' && url.pathname.endsWith('/models')) {
      return sendJson(res, 200, { object: 'list', data: [{ id: 'bench-model', object: 'model', owned_by: 'bench' }] });
    }
    if (req.method !== 'POST' || !url.pathname.endsWith('/chat/completions')) {
      return sendJson(res, 404, { error: { message: `fake LLM: no route for ${req.method} ${url.pathname}` } });
    }
    const body = JSON.parse(raw);
    const reply = replyFor(body);
    log.push({
      at: performance.timeOrigin + performance.now(),
      bytes: Buffer.byteLength(raw),
      id: reply.id,
      toolRound: reply.toolCall !== undefined,
      ...(config.record ? { body } : {}),
    });
    if (config.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, config.latencyMs));
    if (res.destroyed) return;
    const model = typeof body.model === 'string' ? body.model : 'bench-model';
    if (body.stream === true) return sendSse(res, streamEvents(reply, model, log.length));
    return sendJson(res, 200, completion(reply, model, log.length));
  }

  await new Promise((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    config,
    requests: () => log,
    reset: () => {
      log = [];
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** What to answer: one more tool call while the directive asks for more, else the echo. */
export function replyFor(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  let index = -1;
  let match = null;
  for (let i = messages.length - 1; i >= 0 && !match; i--) {
    if (messages[i]?.role !== 'user') continue;
    match = DIRECTIVE.exec(textOf(messages[i].content));
    if (match) index = i;
  }
  if (!match) return { id: null, text: 'ok' };
  const [, id, wanted] = match;
  const done = messages.slice(index + 1).filter((m) => m?.role === 'tool').length;
  const tool = done < Number(wanted) ? listingTool(body.tools) : undefined;
  if (tool) return { id, toolCall: { name: tool, arguments: JSON.stringify({ path: '.' }) }, round: done };
  return { id, text: `echo ${id}` };
}

function listingTool(tools) {
  const names = new Set((Array.isArray(tools) ? tools : []).map((t) => t?.function?.name ?? t?.name));
  return LISTING_TOOLS.find((name) => names.has(name));
}

function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('\n');
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    req.on('data', (chunk) => parts.push(chunk));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

const usage = {
  prompt_tokens: 10,
  completion_tokens: 5,
  total_tokens: 15,
  prompt_tokens_details: { cached_tokens: 0 },
};

function toolCallOf(reply, n) {
  const call = reply.toolCall;
  return { id: `call_${n}_${reply.round}`, type: 'function', function: { name: call.name, arguments: call.arguments } };
}

function completion(reply, model, n) {
  const message = reply.toolCall
    ? { role: 'assistant', content: null, tool_calls: [toolCallOf(reply, n)] }
    : { role: 'assistant', content: reply.text };
  return {
    id: `chatcmpl-bench-${n}`,
    object: 'chat.completion',
    created: 1,
    model,
    choices: [{ index: 0, finish_reason: reply.toolCall ? 'tool_calls' : 'stop', message }],
    usage,
  };
}

/** A streamed reply: the text in three deltas (so streaming consumers see several), or one tool call. */
function streamEvents(reply, model, n) {
  const base = { id: `chatcmpl-bench-${n}`, object: 'chat.completion.chunk', created: 1, model };
  const chunk = (delta, finish = null) => ({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
  const events = [chunk({ role: 'assistant', content: '' })];
  if (reply.toolCall) {
    const { id, type, function: fn } = toolCallOf(reply, n);
    events.push(chunk({ tool_calls: [{ index: 0, id, type, function: { name: fn.name, arguments: '' } }] }));
    events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: fn.arguments } }] }));
  } else {
    const third = Math.ceil(reply.text.length / 3);
    for (let i = 0; i < reply.text.length; i += third) events.push(chunk({ content: reply.text.slice(i, i + third) }));
  }
  events.push(chunk({}, reply.toolCall ? 'tool_calls' : 'stop'));
  events.push({ ...base, choices: [], usage });
  return events;
}

function sendSse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(`${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`);
}

function sendJson(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const flag = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const llm = await startFakeLLM({
    port: Number(flag('port') ?? 0),
    latencyMs: Number(flag('latency') ?? 0),
    record: process.argv.includes('--record'),
  });
  process.stdout.write(`fake-llm ${llm.url}\n`);
  const stop = () => void llm.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
