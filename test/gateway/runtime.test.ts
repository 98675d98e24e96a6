import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app/gateway.js';
import { loadConfig } from '../../src/config/load.js';
import { type Gateway, installSignalHandlers } from '../../src/gateway/lifecycle.js';
import { readState, stateFilePath } from '../../src/gateway/state-file.js';
import { eventually } from '../helpers/eventually.js';
import { type FakeLLM, type FakeScriptStep, startFakeLLM } from '../helpers/fake-llm.js';
import { TestChannel } from './test-channel.js';

const open: { gateway?: Gateway; fake?: FakeLLM }[] = [];
afterEach(async () => {
  for (const { gateway, fake } of open.splice(0)) {
    await gateway?.shutdown('test end');
    await fake?.close();
  }
});

async function configDir(fake: FakeLLM, model = 'test-model') {
  const home = await mkdtemp(join(tmpdir(), 'nb-gw-home-'));
  const dataDir = join(home, '.nanobot');
  await mkdir(join(dataDir, 'workspace'), { recursive: true });
  const configPath = join(dataDir, 'config.json');
  writeConfig(configPath, fake, model);
  return { home, dataDir, configPath };
}

function writeConfig(configPath: string, fake: FakeLLM, model: string): void {
  const config = {
    agents: { defaults: { workspace: join(configPath, '..', 'workspace'), provider: 'custom', model } },
    providers: { custom: { apiKey: 'test-key', apiBase: `${fake.url}/v1` } },
    tools: { web: { enable: false } },
  };
  writeFileSync(configPath, JSON.stringify(config, null, 2));
}

async function start(script: FakeScriptStep[], options: { watchConfig?: boolean } = {}) {
  const fake = await startFakeLLM(script);
  const dirs = await configDir(fake);
  const loaded = await loadConfig({ configPath: dirs.configPath, home: dirs.home, env: {} });
  const channel = new TestChannel();
  const gateway = await startGateway({
    loaded,
    channels: [channel],
    port: 0,
    env: {},
    watchConfig: options.watchConfig ?? false,
  });
  open.push({ gateway, fake });
  return { gateway, channel, fake, ...dirs };
}

describe('startGateway', () => {
  it('answers through the channel, reports health on 127.0.0.1 and writes its state file', async () => {
    const { gateway, channel, dataDir } = await start([{ text: 'hello from the model' }]);
    channel.receive('chat-1', 'hi');
    expect(await channel.waitForReplies('chat-1', 1)).toEqual(['hello from the model']);

    expect(gateway.host).toBe('127.0.0.1');
    const res = await fetch(`http://127.0.0.1:${gateway.port}/health`);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      status: 'ok',
      provider: 'custom',
      model: 'test-model',
      channels: { test: 'running' },
    });
    expect(typeof body.uptimeS).toBe('number');
    expect((await fetch(`http://127.0.0.1:${gateway.port}/other`)).status).toBe(404);

    expect(readState(dataDir)).toMatchObject({ pid: process.pid, port: gateway.port, host: '127.0.0.1' });
    await gateway.shutdown();
    expect(existsSync(stateFilePath(dataDir))).toBe(false);
  });

  it('shuts down during a long turn without waiting for the model, and the next start resumes the session intact', async () => {
    // The answer takes 60 s; the flag says whether shutdown waited for it.
    let answered = false;
    const slow = async () => {
      await new Promise((resolve) => setTimeout(resolve, 60_000).unref());
      answered = true;
      return { text: 'never sent' };
    };
    const { gateway, channel, fake, dataDir, configPath, home } = await start([slow]);
    channel.receive('chat-1', 'remember the blue door');
    await eventually(() => fake.requests.length > 0);

    await gateway.shutdown('SIGTERM');
    expect(answered).toBe(false);
    expect(existsSync(stateFilePath(dataDir))).toBe(false);

    const lines = findSessionLines(dataDir, 'remember the blue door');
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(lines.join('\n')).toContain('remember the blue door');

    // A new gateway on the same data dir continues the conversation with the first message in its history.
    fake.enqueue({ text: 'the door was blue' });
    const loaded = await loadConfig({ configPath, home, env: {} });
    const next = new TestChannel();
    const again = await startGateway({ loaded, channels: [next], port: 0, env: {}, watchConfig: false });
    open.push({ gateway: again });
    next.receive('chat-1', 'what colour was the door?');
    expect(await next.waitForReplies('chat-1', 1)).toEqual(['the door was blue']);
    const sent = JSON.stringify(fake.requests.at(-1)?.body.messages);
    expect(sent).toContain('remember the blue door');
  }, 20_000);

  it('SIGTERM runs the graceful shutdown and exits 0', async () => {
    const { gateway } = await start([]);
    const codes: number[] = [];
    let exited!: () => void;
    const done = new Promise<void>((resolve) => {
      exited = resolve;
    });
    const undo = installSignalHandlers(gateway, {
      exit: (code) => {
        codes.push(code);
        exited();
      },
    });
    try {
      process.emit('SIGTERM', 'SIGTERM');
      await done;
    } finally {
      undo();
    }
    expect(codes).toEqual([0]);
    await gateway.closed;
  });

  it('reloads the model from an edited config between turns and ignores an invalid edit', async () => {
    const { gateway, channel, fake, configPath } = await start([{ text: 'one' }, { text: 'two' }, { text: 'three' }], {
      watchConfig: true,
    });
    channel.receive('chat-1', 'first');
    await channel.waitForReplies('chat-1', 1);
    expect(fake.requests[0]?.body.model).toBe('test-model');

    writeConfig(configPath, fake, 'other-model');
    await eventually(() => gateway.agent().model.model === 'other-model');
    channel.receive('chat-1', 'second');
    await channel.waitForReplies('chat-1', 2);
    expect(fake.requests[1]?.body.model).toBe('other-model');

    writeFileSync(configPath, '{ "agents": ');
    expect(await gateway.reload()).toBe(false);
    channel.receive('chat-1', 'third');
    expect(await channel.waitForReplies('chat-1', 3)).toEqual(['one', 'two', 'three']);
    expect(fake.requests[2]?.body.model).toBe('other-model');
  });

  it('refuses a second gateway on the same data dir', async () => {
    const { configPath, home } = await start([]);
    const loaded = await loadConfig({ configPath, home, env: {} });
    await expect(startGateway({ loaded, port: 0, env: {}, watchConfig: false })).rejects.toThrow(/already running/);
  });
});

function findSessionLines(dataDir: string, text: string): string[] {
  const dir = join(dataDir, 'sessions');
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const path = join(dir, name);
    if (!name.endsWith('.jsonl')) continue;
    const content = readFileSync(path, 'utf8');
    if (content.includes(text)) return content.trim().split('\n');
  }
  throw new Error(`no session file in ${dir} contains "${text}"`);
}
