import { readdirSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiServer, startApiServer } from '../../src/api/server.js';
import { type Agent, createAgent } from '../../src/app/agent.js';
import { loadConfig } from '../../src/config/load.js';
import { type FakeLLM, type FakeScriptStep, startFakeLLM } from '../helpers/fake-llm.js';

const open: { server: ApiServer; agent: Agent; fake: FakeLLM }[] = [];
afterEach(async () => {
  for (const { server, agent, fake } of open.splice(0)) {
    await server.close();
    await agent.shutdown();
    await fake.close();
  }
});

interface StartOptions {
  apiKey?: string;
  timeoutS?: number;
  corsOrigins?: string[];
  maxBodyBytes?: number;
  env?: NodeJS.ProcessEnv;
}

async function start(script: FakeScriptStep[], options: StartOptions = {}) {
  const fake = await startFakeLLM(script);
  const home = await mkdtemp(join(tmpdir(), 'nb-api-'));
  const workspace = join(home, '.nanobot', 'workspace');
  await mkdir(workspace, { recursive: true });
  const configPath = join(home, '.nanobot', 'config.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      agents: { defaults: { workspace, provider: 'custom', model: 'test-model' } },
      providers: { custom: { apiKey: 'k', apiBase: `${fake.url}/v1` } },
      tools: { web: { enable: false } },
    }),
  );
  const loaded = await loadConfig({ configPath, home, env: options.env ?? {} });
  const agent = await createAgent(loaded, { env: {} });
  const server = await startApiServer({
    loop: agent.loop,
    sessions: agent.sessions,
    model: 'test-model',
    host: '127.0.0.1',
    port: 0,
    apiKey: options.apiKey ?? null,
    timeoutS: options.timeoutS ?? 30,
    corsOrigins: options.corsOrigins ?? [],
    mediaDir: join(home, '.nanobot', 'media', 'api'),
    ...(options.maxBodyBytes ? { maxBodyBytes: options.maxBodyBytes } : {}),
  });
  open.push({ server, agent, fake });
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: options.apiKey ?? 'unused', maxRetries: 0 });
  return { fake, server, agent, client, home, sessionsDir: agent.sessions.dir };
}

/** A request in session `id` (`session_id` is nanobot's extension of the request body). */
function inSession(id: string, content: string): OpenAI.ChatCompletionCreateParamsNonStreaming {
  const body = { model: 'test-model', messages: [{ role: 'user' as const, content }], session_id: id };
  return body;
}

/** The user texts the model was sent, without the runtime-context block the agent appends. */
function userTexts(fake: FakeLLM, request: number): string[] {
  const messages = (fake.requests[request]?.body.messages ?? []) as { role: string; content: unknown }[];
  return messages
    .filter((m) => m.role === 'user')
    .map(
      (m) => String(typeof m.content === 'string' ? m.content : JSON.stringify(m.content)).split('\n\n[Runtime')[0]!,
    );
}

describe('OpenAI-compatible API', () => {
  it('answers a chat completion from the official OpenAI client, and lists the model', async () => {
    const { client, fake } = await start([
      { text: 'Hello from the agent', usage: { promptTokens: 12, completionTokens: 4 } },
    ]);
    const completion = await client.chat.completions.create({
      model: 'test-model',
      messages: [{ role: 'user', content: 'Hi there' }],
    });
    expect(completion.choices[0]?.message.content).toBe('Hello from the agent');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 });
    expect(userTexts(fake, 0)).toEqual(['Hi there']);
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['test-model']);
  });

  it('streams the answer as chat.completion.chunk events ending with [DONE]', async () => {
    const { client } = await start([{ text: 'Streaming works fine.' }]);
    const stream = await client.chat.completions.create({
      model: 'test-model',
      messages: [{ role: 'user', content: 'stream please' }],
      stream: true,
    });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('Streaming works fine.');
    expect(finish).toBe('stop');
  });

  it('keeps a conversation per session_id; without one, earlier messages are the context and nothing is kept', async () => {
    const { client, fake, sessionsDir } = await start([{ text: 'first' }, { text: 'second' }, { text: 'third' }]);
    const ask = (content: string) => client.chat.completions.create(inSession('notes', content));
    await ask('remember 42');
    await ask('what did I say?');
    expect(userTexts(fake, 1)).toEqual(['remember 42', 'what did I say?']);

    const before = readdirSync(sessionsDir).length;
    const stateless = await client.chat.completions.create({
      model: 'test-model',
      messages: [
        { role: 'system', content: 'Answer tersely.' },
        { role: 'user', content: 'earlier question' },
        { role: 'assistant', content: 'earlier answer' },
        { role: 'user', content: 'follow-up' },
      ],
    });
    expect(stateless.choices[0]?.message.content).toBe('third');
    const sent = (fake.requests[2]?.body.messages ?? []) as { role: string; content: string }[];
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'user', 'assistant', 'user']);
    expect(sent[1]?.content).toContain('Answer tersely.');
    expect(sent[3]?.content).toBe('earlier answer');
    expect(readdirSync(sessionsDir).length).toBe(before);
  });

  it('passes data-URL images to the model and refuses remote image URLs', async () => {
    const { client, fake, home } = await start([{ text: 'A red pixel.' }]);
    const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
    const answer = await client.chat.completions.create({
      model: 'test-model',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${pixel}` } },
          ],
        },
      ],
    });
    expect(answer.choices[0]?.message.content).toBe('A red pixel.');
    const sent = JSON.stringify(fake.requests[0]?.body.messages);
    expect(sent).toContain(`data:image/png;base64,${pixel}`);
    expect(readdirSync(join(home, '.nanobot', 'media', 'api'))).toHaveLength(1);

    const remote = await client.chat.completions
      .create({
        model: 'test-model',
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://169.254.169.254/x.png' } }] },
        ],
      })
      .catch((e: unknown) => e);
    expect((remote as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect(String((remote as Error).message)).toMatch(/remote image URLs are not fetched/);
    expect(fake.requests).toHaveLength(1);
  });

  it('runs concurrent requests of one session one after the other', async () => {
    const { client, fake } = await start([
      { text: 'one', delayMs: 150 },
      { text: 'two', delayMs: 10 },
    ]);
    const ask = (content: string) => client.chat.completions.create(inSession('same', content));
    const [a, b] = await Promise.all([ask('A'), ask('B')]);
    expect([a.choices[0]?.message.content, b.choices[0]?.message.content]).toEqual(['one', 'two']);
    // The second request was built after the first turn finished: it carries the first answer.
    const second = (fake.requests[1]?.body.messages ?? []) as { role: string; content: string }[];
    expect(second.some((m) => m.role === 'assistant' && m.content === 'one')).toBe(true);
  });

  it('requires the API key when one is set, with an OpenAI-shaped 401', async () => {
    const { server } = await start([{ text: 'secret' }], { apiKey: 'sk-test-123' });
    const anonymous = await fetch(`${server.url}/v1/models`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: { type: 'invalid_api_key' } });
    const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    await expect(wrong.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const right = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-test-123', maxRetries: 0 });
    expect((await right.models.list()).data).toHaveLength(1);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });

  it('refuses to bind beyond loopback without an API key', async () => {
    const { agent } = await start([]);
    await expect(
      startApiServer({
        loop: agent.loop,
        sessions: agent.sessions,
        model: 'test-model',
        host: '0.0.0.0',
        port: 0,
        timeoutS: 5,
        mediaDir: tmpdir(),
      }),
    ).rejects.toThrow(/without an API key/);
  });

  it('rejects bad requests with clear 400/413 errors and a foreign model', async () => {
    const { server } = await start([], { maxBodyBytes: 2000 });
    const post = (body: string) =>
      fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
    const notJson = await post('{nope');
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: { message: 'the request body is not valid JSON' } });
    const noUser = await post(JSON.stringify({ messages: [{ role: 'system', content: 'x' }] }));
    expect(((await noUser.json()) as { error: { message: string } }).error.message).toMatch(/user message/);
    const model = await post(JSON.stringify({ model: 'gpt-5', messages: [{ role: 'user', content: 'x' }] }));
    expect(model.status).toBe(400);
    expect(((await model.json()) as { error: { message: string } }).error.message).toMatch(/"gpt-5" is not served/);
    const big = await post(JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(5000) }] }));
    expect(big.status).toBe(413);
    expect((await fetch(`${server.url}/v1/nothing`)).status).toBe(404);
  });

  it('answers 504 when the turn takes longer than the timeout', async () => {
    const { client } = await start([{ text: 'too late', delayMs: 3000 }], { timeoutS: 0.3 });
    const error = await client.chat.completions
      .create({ model: 'test-model', messages: [{ role: 'user', content: 'slow' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(504);
  });

  it('reports a model stream that stalls after text: 504 with what to set, or the partial text then an error event', async () => {
    const stall = { text: 'The first words and then nothing more.', stallAfterEvents: 2 };
    const { client, server, fake } = await start([stall, stall], { env: { NANOBOT_STREAM_IDLE_TIMEOUT_S: '0.2' } });
    const stalled = /The model's stream stalled for 0\.2 s .*; set NANOBOT_STREAM_IDLE_TIMEOUT_S to wait longer\./;
    const error = await client.chat.completions.create(inSession('stall-a', 'hi')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(504);
    expect((error as Error).message).toMatch(stalled);

    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...inSession('stall-b', 'hi'), stream: true }),
    });
    const events = (await res.text())
      .split('\n\n')
      .map((block) => block.replace(/^data: /, '').trim())
      .filter(Boolean);
    expect(events.at(-1)).toBe('[DONE]');
    const parsed = events.slice(0, -1).map((e) => JSON.parse(e) as Record<string, unknown>);
    const text = parsed
      .map((e) => (e.choices as { delta: { content?: string } }[] | undefined)?.[0]?.delta.content ?? '')
      .join('');
    expect(text.length).toBeGreaterThan(0);
    expect('The first words and then nothing more.'.startsWith(text)).toBe(true);
    const failure = parsed.find((e) => e.error) as { error: { message: string; type: string } } | undefined;
    expect(failure?.error.type).toBe('timeout');
    expect(failure?.error.message).toMatch(stalled);
    expect(fake.requests).toHaveLength(2);
  });

  it('sends no CORS headers unless the origin is configured', async () => {
    const closed = await start([]);
    const denied = await fetch(`${closed.server.url}/v1/models`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example' },
    });
    expect(denied.status).toBe(403);
    expect(denied.headers.get('access-control-allow-origin')).toBeNull();

    const opened = await start([], { corsOrigins: ['https://app.example'] });
    const allowed = await fetch(`${opened.server.url}/v1/models`, { headers: { origin: 'https://app.example' } });
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const preflight = await fetch(`${opened.server.url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example' },
    });
    expect(preflight.status).toBe(204);
  });
});
