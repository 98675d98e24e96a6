// The fake LLM in its own process, so serving it never competes with the bench's own clients for the event loop.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', 'fake-llm.mjs');

/** @returns {Promise<{ url: string, requests(): Promise<object[]>, clear(): Promise<void>, configure(c: object): Promise<void>, close(): Promise<void> }>} */
export async function spawnFakeLLM({ latencyMs = 0, record = false } = {}) {
  const args = [SCRIPT, `--latency=${latencyMs}`, ...(record ? ['--record'] : [])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    child.on('exit', (code) => reject(new Error(`fake LLM exited ${code}`)));
    child.stdout.on('data', (d) => {
      out += d;
      const match = /fake-llm (\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
  });
  const control = async (method, path, body) => {
    const res = await fetch(`${url}/_bench/${path}`, {
      method,
      ...(body ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
    });
    return res.json();
  };
  return {
    url,
    requests: () => control('GET', 'requests'),
    clear: async () => {
      await control('DELETE', 'requests');
    },
    configure: async (config) => {
      await control('POST', 'config', config);
    },
    close: () =>
      new Promise((resolve) => {
        child.removeAllListeners('exit');
        child.on('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
