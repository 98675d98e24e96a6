/**
 * Configured secrets never reach the model through a tool result (red team F8). A tool — an MCP server failing and
 * quoting its token, its stderr tail, a file the model reads — can hand back the provider's API key or a channel
 * token; the tool registry masks every configured secret (raw and URL-encoded) and the known secret shapes in every
 * result, successful or not, before the model sees it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolRegistry } from '../../src/tools/registry.js';
import type { Tool, ToolResult } from '../../src/tools/types.js';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { startFakeLLM } from '../helpers/fake-llm.js';
import { makeContext, textOf } from '../tools/helpers.js';

const API_KEY = 'prov-Zq8RkT4vWm2NxY7pLs9aB3cD';
const CHANNEL_TOKEN = '7312045599:AAFr9-Xk2LqPz8TvWm3YcN5bR7dJ1hGs0eK';
/** A provider key that only the environment holds (providers read e.g. OPENROUTER_API_KEY). */
const ENV_KEY = 'envk-9Hq2Lm7Rt4Wx8Zc3Vb6N';
const WEIRD_SECRET = 'pa ss/wo+rd&=?#1';
const SECRETS = [API_KEY, CHANNEL_TOKEN, WEIRD_SECRET];

const tool = (name: string, run: () => Promise<ToolResult>): Tool => ({
  name,
  description: name,
  parameters: z.object({}),
  execute: run,
});

/** Every way a tool can hand text back, each quoting a secret in a different spelling. */
const LEAKS: [string, () => Promise<ToolResult>][] = [
  ['text', async () => ({ content: `key is ${API_KEY}` })],
  ['url-encoded', async () => ({ content: `GET /x?t=${encodeURIComponent(WEIRD_SECRET)}` })],
  ['error result', async () => ({ content: `cannot log in with ${CHANNEL_TOKEN}`, isError: true })],
  [
    'thrown',
    async () => {
      throw new Error(`MCP server 'x' is unavailable: its stderr said: key=${API_KEY}`);
    },
  ],
  [
    'thrown non-error',
    async () => {
      throw `token ${CHANNEL_TOKEN}`;
    },
  ],
  [
    'text parts',
    async () => ({
      content: [
        { type: 'text', text: `a ${API_KEY}` },
        { type: 'text', text: WEIRD_SECRET },
      ],
    }),
  ],
  [
    'error parts',
    async () => ({ content: [{ type: 'text', text: `bad ${encodeURIComponent(CHANNEL_TOKEN)}` }], isError: true }),
  ],
  ['long text', async () => ({ content: `${API_KEY} ${'x'.repeat(30_000)} ${API_KEY}` })],
  ['key at the cut', async () => ({ content: `${'x'.repeat(15_990)}${API_KEY}` })],
  ['read_file', async () => ({ content: `1\tTELEGRAM=${CHANNEL_TOKEN}` })],
  // Known shapes, whatever their value (not configured here).
  ['openai-shaped', async () => ({ content: 'OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234' })],
  [
    'bot url',
    async () => ({ content: 'GET https://api.telegram.org/bot123456:ABCdefGHIjklMNOpqrSTUvwx/getMe failed' }),
  ],
  ['bearer', async () => ({ content: 'Authorization: Bearer abc123def456ghi789' })],
];

describe('tool results are masked before they reach the model', () => {
  const registry = new ToolRegistry({ secrets: () => SECRETS });
  for (const [name, run] of LEAKS) registry.register(tool(name.replaceAll(/[^a-z]/g, '_'), run));

  for (const [name] of LEAKS) {
    it(`${name}: no secret in what the model reads`, async () => {
      const call = {
        id: '1',
        type: 'function' as const,
        function: { name: name.replaceAll(/[^a-z]/g, '_'), arguments: '{}' },
      };
      const text = textOf(await registry.execute(call, makeContext()));
      for (const secret of SECRETS) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(encodeURIComponent(secret));
      }
      expect(text).not.toMatch(/sk-proj-abc|ABCdefGHI|abc123def456/);
      expect(text).not.toContain(API_KEY.slice(0, 12));
      expect(text).toContain('<redacted>');
    });
  }
});

const LEAKY_MCP = join(import.meta.dirname, 'fixtures', 'leaky-mcp-server.mjs');

describe('an MCP server that leaks its credentials (built CLI)', () => {
  it('the model request never contains the API key, the channel token or a key from the environment', async () => {
    const fake = await startFakeLLM([
      {
        toolCalls: [
          { name: 'mcp_leaky_leak_error', arguments: {} },
          { name: 'mcp_leaky_leak_text', arguments: {} },
          { name: 'mcp_leaky_leak_is_error', arguments: {} },
          { name: 'read_file', arguments: { path: 'notes.txt' } },
        ],
      },
      // The server dies printing the key; restarting it fails with the key in its stderr, quoted in the error.
      { toolCalls: [{ name: 'mcp_leaky_crash', arguments: {} }] },
      { toolCalls: [{ name: 'mcp_leaky_leak_text', arguments: {} }] },
      { text: 'Done.' },
    ]);
    try {
      const home = tempHome();
      const state = join(mkdtempSync(join(tmpdir(), 'nb-leaky-')), 'crashed');
      expect((await runCli(['onboard'], home)).code).toBe(0);
      editConfig(home, (c) => {
        c.agents.defaults.provider = 'custom';
        c.agents.defaults.model = 'test-model';
        c.providers.custom = { apiKey: API_KEY, apiBase: `${fake.url}/v1` };
        const channels = (c.channels ?? {}) as Record<string, Record<string, unknown>>;
        channels.telegram = { ...channels.telegram, token: CHANNEL_TOKEN };
        c.channels = channels;
        c.tools = {
          mcpServers: {
            leaky: { command: process.execPath, args: [LEAKY_MCP, API_KEY, CHANNEL_TOKEN, state, ENV_KEY] },
          },
        };
      });
      writeFileSync(join(home, '.nanobot', 'workspace', 'notes.txt'), `telegram: ${CHANNEL_TOKEN}\n`);
      const result = await runCli(['agent', '-m', 'Use the leaky tools.'], home, { OPENROUTER_API_KEY: ENV_KEY });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.trim()).toBe('Done.');
      expect(fake.requests.length).toBe(4);

      const toolTexts = fake.requests
        .flatMap((request) => (request.body.messages ?? []) as { role: string; content: unknown }[])
        .filter((message) => message.role === 'tool')
        .map((message) => JSON.stringify(message.content));
      expect(toolTexts.join('\n')).toMatch(/unavailable/);
      for (const request of fake.requests) {
        const body = JSON.stringify(request.body);
        for (const secret of [API_KEY, CHANNEL_TOKEN, ENV_KEY]) {
          expect(body).not.toContain(secret);
          expect(body).not.toContain(encodeURIComponent(secret));
        }
      }
    } finally {
      await fake.close();
    }
  }, 60_000);
});
