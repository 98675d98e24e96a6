// nanobot-ts (this repository), run from its build (bin/nanobot.js → dist/) as a user runs it.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePorts, httpOk } from '../lib/proc.mjs';
import { scratchDir } from '../lib/scratch.mjs';
import { postJson } from './http.mjs';

const TOKEN = 'bench-websocket-token-0123456789';

/** @param {{ root: string, profileDir?: string }} options */
export function oursAgent({ root, profileDir }) {
  const bin = join(root, 'bin', 'nanobot.js');
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  /** `--cpu-prof` for our processes only, one folder per scenario (bench --profile=DIR). */
  const node = (tag, args) => [
    ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, tag)}`] : []),
    bin,
    ...args,
  ];
  return {
    id: 'ours',
    label: `nanobot-ts ${version} (this repo)`,
    node: process.execPath,
    versionArgv: () => node('version', ['--version']),

    /** A home whose config aims the agent at the fake LLM; ports for the API, the gateway health and WebSocket. */
    async home(llmUrl) {
      const home = scratchDir('ours-home');
      const [api, health, ws] = await freePorts(3);
      mkdirSync(join(home, '.nanobot'), { recursive: true });
      const config = {
        agents: { defaults: { provider: 'custom', model: 'bench-model' } },
        providers: { custom: { apiBase: `${llmUrl}/v1`, apiKey: 'bench' } },
        api: { port: api },
        gateway: { port: health },
        channels: { websocket: { port: ws, token: TOKEN } },
      };
      writeFileSync(join(home, '.nanobot', 'config.json'), JSON.stringify(config, null, 2));
      return { home, cwd: home, env: { PATH: process.env.PATH, HOME: home }, ports: { api, health, ws } };
    },

    oneShot: (_h, message, session, tag = 'one-shot') => ({
      argv: node(tag, ['agent', '-m', message, '--no-markdown', '-s', session]),
    }),

    /** `nanobot serve`: the OpenAI-compatible API; one session per client (`session_id`). */
    api: (h) => ({
      argv: node('api', ['serve', '--port', String(h.ports.api)]),
      ready: () => httpOk(`http://127.0.0.1:${h.ports.api}/health`),
      chat: async (client, text) => {
        const body = await postJson(`http://127.0.0.1:${h.ports.api}/v1/chat/completions`, {
          session_id: `bench-${client}`,
          messages: [{ role: 'user', content: text }],
        });
        return body.choices?.[0]?.message?.content ?? '';
      },
    }),

    /** `nanobot gateway` with the WebSocket channel; ready once the channel runs. */
    gateway: (h, { maxConcurrent } = {}) => ({
      argv: node('gateway', ['gateway']),
      env: maxConcurrent ? { NANOBOT_MAX_CONCURRENT_REQUESTS: String(maxConcurrent) } : {},
      ready: async () => {
        const res = await fetch(`http://127.0.0.1:${h.ports.health}/health`, { signal: AbortSignal.timeout(5_000) });
        return res.ok && /"websocket":"running"/.test(await res.text());
      },
      wsUrl: (clientId) => `ws://127.0.0.1:${h.ports.ws}/?client_id=${clientId}&token=${TOKEN}`,
    }),
  };
}
