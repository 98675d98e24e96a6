// Startup benchmark: `nanobot --version`, and launch → first request at an LLM, as ratios to a bare `node -e ""`.
// Usage: npm run build && node bench/startup.mjs [runs]
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'nanobot.js');
const runs = Number(process.argv[2] ?? 15);

/** A minimal OpenAI-compatible fake that notes when each request arrives and answers "ok". */
let onRequest = () => {};
const server = http.createServer(async (req, res) => {
  onRequest(performance.now());
  for await (const _ of req);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (delta, finish = null) =>
    `data: ${JSON.stringify({ id: 'b', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  res.end(`${chunk({ role: 'assistant', content: 'ok' })}${chunk({}, 'stop')}data: [DONE]\n\n`);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;

const home = mkdtempSync(join(tmpdir(), 'nb-bench-'));
mkdirSync(join(home, '.nanobot'), { recursive: true });
writeFileSync(
  join(home, '.nanobot', 'config.json'),
  JSON.stringify({
    agents: { defaults: { provider: 'custom', model: 'bench-model' } },
    providers: { custom: { apiBase: `http://127.0.0.1:${port}/v1`, apiKey: 'bench' } },
  }),
);
const env = { PATH: process.env.PATH, HOME: home };

function run(args, untilFirstRequest = false) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let first;
    onRequest = (t) => {
      first ??= t;
    };
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('exit', (code) => {
      const end = performance.now();
      if (code !== 0) return reject(new Error(`${args.join(' ')} exited ${code}: ${stderr}`));
      if (untilFirstRequest && first === undefined) return reject(new Error('no request reached the fake LLM'));
      resolve((untilFirstRequest ? first : end) - start);
    });
  });
}

async function measure(label, args, untilFirstRequest) {
  await run(args, untilFirstRequest); // warm the file cache
  const times = [];
  for (let i = 0; i < runs; i++) times.push(await run(args, untilFirstRequest));
  times.sort((a, b) => a - b);
  return { label, median: times[Math.floor(times.length / 2)] };
}

const baseline = await measure('node -e ""', ['-e', ''], false);
const results = [
  // Reference: what Node alone needs to send one fetch() (its built-in HTTP client loads on first use).
  await measure('node -e "fetch(…)" → request', ['-e', `fetch('http://127.0.0.1:${port}/v1').catch(() => {})`], true),
  await measure('nanobot --version', [bin, '--version'], false),
  await measure('nanobot agent -m → first LLM request', [bin, 'agent', '-m', 'hi'], true),
];
server.close();

console.log(`startup, median of ${runs} runs (baseline measured in the same run)`);
console.log(`  ${baseline.label.padEnd(40)} ${baseline.median.toFixed(1).padStart(7)} ms   1.00×`);
for (const r of results) {
  const over = r.median - baseline.median;
  console.log(
    `  ${r.label.padEnd(40)} ${r.median.toFixed(1).padStart(7)} ms   ${(r.median / baseline.median).toFixed(2)}×   (+${over.toFixed(1)} ms over bare node)`,
  );
}
