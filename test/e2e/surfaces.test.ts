/**
 * The long-running surfaces of the installed package: `nanobot serve` (the OpenAI-compatible API, plain and
 * streamed) and `nanobot gateway` with a WebSocket client, which gets `ready`, sends a message and receives what
 * the message tool sent plus the streamed answer. (`agent -m` is in agent-tools.test.ts.)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { freePort } from '../mcp/helpers.js';
import { homeWith, lastToolResult, type RunningNanobot, removeInstalledCopy, startNanobot } from './harness.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(removeInstalledCopy);

async function fakeLLM(script: Parameters<typeof startFakeLLM>[0]): Promise<FakeLLM> {
  const fake = await startFakeLLM(script);
  cleanups.push(() => fake.close());
  return fake;
}

function start(args: string[], home: string): RunningNanobot {
  const running = startNanobot(args, home);
  cleanups.push(() => running.stop());
  return running;
}

describe('nanobot serve (installed package)', () => {
  it('answers POST /v1/chat/completions with a tool turn, then streams an answer as SSE', async () => {
    const fake = await fakeLLM([
      { toolCalls: [{ name: 'read_file', arguments: { path: 'plan.md' } }] },
      { text: 'The plan is to ship on Friday.' },
      { text: 'Streaming works fine.' },
    ]);
    const port = await freePort();
    const { home, workspace } = homeWith(fake.url);
    writeFileSync(join(workspace, 'plan.md'), 'Ship on Friday.\n');
    const serve = start(['serve', '--port', String(port)], home);
    await serve.waitForOutput(/nanobot API on http:\/\/127\.0\.0\.1:\d+\/v1/, 'the API to listen');
    const post = (body: Record<string, unknown>) =>
      fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    const plain = await post({ messages: [{ role: 'user', content: 'What is the plan?' }], session_id: 'e2e' });
    expect(plain.status).toBe(200);
    const completion = (await plain.json()) as { object: string; choices: { message: { content: string } }[] };
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]?.message.content).toBe('The plan is to ship on Friday.');
    expect(lastToolResult(fake.requests[1])).toMatch(/Ship on Friday\./);

    const streamed = await post({
      messages: [{ role: 'user', content: 'Stream now' }],
      session_id: 'e2e',
      stream: true,
    });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await streamed.text())
      .split('\n\n')
      .map((block) => block.replace(/^data: /, '').trim())
      .filter(Boolean);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { choices: { delta: { content?: string } }[] });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Streaming works fine.');
    // The same session: the model was sent the first exchange with the second question.
    expect(JSON.stringify(fake.requests[2]?.body.messages)).toContain('The plan is to ship on Friday.');
  });
});

describe('nanobot gateway with a WebSocket client (installed package)', () => {
  it('sends ready, takes a message, delivers the message tool’s text and streams the answer', async () => {
    const fake = await fakeLLM([
      { toolCalls: [{ name: 'message', arguments: { content: 'Heads up: checking the calendar.' } }] },
      { text: 'Your calendar is clear tomorrow.' },
    ]);
    const wsPort = await freePort();
    const { home } = homeWith(fake.url, { channels: { websocket: { port: wsPort, pingIntervalS: 60 } } });
    const gateway = start(['gateway', '--port', '0'], home);
    const url = `http://127.0.0.1:${wsPort}`;
    // The channel starts in the background: it is up once its REST API asks for the token.
    await eventually(async () => (await fetch(`${url}/api/info`).catch(() => undefined))?.status === 401, gateway);
    const token = readFileSync(join(home, '.nanobot', 'webui-token'), 'utf8').trim();

    const client: TestClient = await connect(wsPort, { token, clientId: 'e2e', origin: url });
    cleanups.push(() => client.close());
    await client.next((f) => f.event === 'ready');
    client.send({ type: 'new_chat' });
    const attached = await client.next((f) => f.event === 'attached');
    const chatId = attached.event === 'attached' ? attached.chat_id : '';
    client.send({ type: 'message', chat_id: chatId, content: 'Am I free tomorrow?' });
    // The answer's stream_end, not the first turn_end: today the message tool's send is followed by one too.
    await client.next((f) => f.event === 'stream_end' && f.chat_id === chatId, 15_000);

    const frames = client.frames.filter((f) => 'chat_id' in f && f.chat_id === chatId);
    const sent = frames.filter((f) => f.event === 'message' && f.kind === undefined);
    expect(sent.map((f) => (f.event === 'message' ? f.text : ''))).toEqual(['Heads up: checking the calendar.']);
    const streamed = frames.flatMap((f) => (f.event === 'delta' ? [f.text] : [])).join('');
    expect(streamed).toBe('Your calendar is clear tomorrow.');
    expect(frames.find((f) => f.event === 'stream_end')).toMatchObject({ text: 'Your calendar is clear tomorrow.' });
    expect(JSON.stringify(fake.requests[0]?.body.messages)).toContain('Am I free tomorrow?');
    expect(lastToolResult(fake.requests[1])).not.toMatch(/^Error/);
  });
});

/** Polls `check` (bounded) while the process runs. */
async function eventually(check: () => Promise<boolean>, running: RunningNanobot, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (running.child.exitCode !== null) throw new Error(`nanobot exited:\n${running.output()}`);
    if (Date.now() > deadline) throw new Error(`timed out; output so far:\n${running.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
