// Peer: @jcheesepkg/nanobot (npm), a TypeScript port of nanobot on Node 20, configured through its LLM_* env vars.
// It has no WebSocket channel; its gateway serves `POST /api/chat {message, session}` over HTTP.
import { dirname, join } from 'node:path';
import { freePorts, httpOk } from '../lib/proc.mjs';
import { scratchDir } from '../lib/scratch.mjs';
import { postJson } from './http.mjs';

/** @param {{ entry: string, node: string, version: string }} peer */
export function nanobotAgent(peer) {
  return {
    id: 'nanobot',
    label: `nanobot ${peer.version} (@jcheesepkg/nanobot)`,
    node: peer.node,
    /** Its library entry (SessionManager, ContextBuilder), for in-process measurements. */
    library: join(dirname(peer.entry), '..', 'index.mjs'),
    websocketGap: 'has no WebSocket channel (Telegram and LINE only); its gateway HTTP API is measured under API',
    versionArgv: () => [peer.entry, '--version'],

    async home(llmUrl) {
      const home = scratchDir('nanobot-home');
      const [api] = await freePorts(1);
      const env = {
        PATH: process.env.PATH,
        HOME: home,
        LLM_API_BASE: `${llmUrl}/v1`,
        LLM_API_KEY: 'bench',
        LLM_MODEL: 'bench-model',
      };
      return { home, cwd: home, env, ports: { api } };
    },

    oneShot: (_h, message, session) => ({ argv: [peer.entry, 'agent', '-m', message, '-s', session] }),

    api: (h) => ({
      argv: [peer.entry, 'gateway', '-p', String(h.ports.api)],
      ready: () => httpOk(`http://127.0.0.1:${h.ports.api}/`),
      chat: async (client, text) => {
        const body = await postJson(`http://127.0.0.1:${h.ports.api}/api/chat`, {
          message: text,
          session: `bench:${client}`,
        });
        return body.response ?? '';
      },
    }),
  };
}
