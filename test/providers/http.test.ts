// The SDKs' HTTP client (node-fetch over node:http) against a real loopback server: what a user sees when the
// provider's connection drops in the middle of an answer, or when they stop a turn while it streams.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAnthropicProvider } from '../../src/providers/anthropic.js';
import { createOpenAICompatProvider } from '../../src/providers/openai-compat.js';
import type { LLMProvider } from '../../src/providers/types.js';
import { collect, resolvedProvider, textOf } from './collect.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server that streams `frames` as SSE, then either cuts the connection or holds it open. */
async function sseServer(frames: string[], then: 'cut' | 'hang'): Promise<string> {
  server = createServer((req, res: ServerResponse) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const frame of frames) res.write(frame);
    if (then === 'cut') setTimeout(() => res.socket?.destroy(), 20);
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const resolved = (provider: string, apiBase: string) => resolvedProvider(provider, 'm', { apiKey: 'k', apiBase });

const openaiFrame = (content: string) =>
  `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
const anthropicFrames = (text: string) => [
  `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'm1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 1, output_tokens: 0 } } })}\n\n`,
  `event: content_block_start\ndata: ${JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })}\n\n`,
  `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })}\n\n`,
];

const wires: Array<[string, (base: string) => LLMProvider, string[]]> = [
  [
    'OpenAI-compatible',
    (base) => createOpenAICompatProvider(resolved('custom', `${base}/v1`), { sleep: async () => {} }),
    [openaiFrame('Half an ans')],
  ],
  [
    'Anthropic',
    (base) => createAnthropicProvider(resolved('anthropic', base), { sleep: async () => {} }),
    anthropicFrames('Half an ans'),
  ],
];

describe.each(wires)('%s over the default HTTP client', (_name, makeProvider, frames) => {
  it('a connection cut mid-answer is a network error that keeps the partial text, not a finished answer', async () => {
    const provider = makeProvider(await sseServer(frames, 'cut'));
    const { events, response } = await collect(provider, {
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      maxTokens: 64,
    });
    expect(textOf(events)).toBe('Half an ans');
    expect(response).toMatchObject({ finishReason: 'error', content: 'Half an ans', error: { kind: 'network' } });
  });

  it('stopping the turn while the answer streams ends it at once as aborted', async () => {
    const provider = makeProvider(await sseServer(frames, 'hang'));
    const controller = new AbortController();
    const stream = provider.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      maxTokens: 64,
      signal: controller.signal,
    });
    for await (const event of stream) if (event.type === 'text-delta') controller.abort();
    expect(await stream.result()).toMatchObject({ finishReason: 'error', error: { kind: 'aborted' } });
  });
});
