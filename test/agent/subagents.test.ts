import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ContextBuilder } from '../../src/agent/context.js';
import { followUpSink } from '../../src/agent/follow-ups.js';
import { AgentLoop } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import { SubagentManager, subagentSystemPrompt, subagentToolRegistry } from '../../src/agent/subagents.js';
import { createAgent } from '../../src/app/agent.js';
import { MessageBus } from '../../src/bus/message-bus.js';
import type { OutboundMessage } from '../../src/bus/types.js';
import { loadConfig } from '../../src/config/load.js';
import { Dispatcher } from '../../src/gateway/dispatcher.js';
import type { ChatRequest } from '../../src/providers/types.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { createSpawnTool } from '../../src/tools/spawn.js';
import { defineTool, ok } from '../../src/tools/types.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { call, FakeProvider, type Scripted } from '../helpers/fake-provider.js';

const KEY = 'cli:direct';
const input = (content: string) => ({ channel: 'cli', chatId: 'direct', content });

/** Resolves once `check` holds (polled on the event loop; no timing is asserted). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
  expect(check()).toBe(true);
}

/** A `work` tool that logs when each named job starts and ends; gated jobs wait for `release(name)`. */
function workTool(gated: boolean) {
  const log: string[] = [];
  const gates = new Map<string, () => void>();
  const tool = defineTool({
    name: 'work',
    description: 'Does the work',
    parameters: z.object({ name: z.string() }),
    async execute({ name }, ctx) {
      log.push(`start ${name}`);
      if (gated) {
        const released = new Promise<void>((resolve) => gates.set(name, resolve));
        const aborted = new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
        await Promise.race([released, aborted]);
      }
      log.push(`${ctx.signal.aborted ? 'cancelled' : 'end'} ${name}`);
      return ok(`worked on ${name}`);
    },
  });
  return { tool, log, release: (name: string) => gates.get(name)?.() };
}

/** Subagents: the task names a job; the first reply runs `work` for it, the second reports. */
function subagentReply(request: ChatRequest) {
  const task = String(request.messages[1]?.content ?? '');
  const name = /task (\w+)/.exec(task)?.[1] ?? '?';
  if (request.messages.at(-1)?.role === 'user') return { toolCalls: [call('work', { name })] };
  return { content: `report ${name}` };
}

/** The parent: answers a subagent report by quoting its label, anything else with `fallback`. */
function parentReply(fallback: Scripted) {
  return (request: ChatRequest) => {
    const label = /^\[Subagent '(\w+)' completed\]/.exec(String(request.messages.at(-1)?.content ?? ''))?.[1];
    if (label) return { content: `${label} is finished` };
    return typeof fallback === 'function' ? fallback(request) : fallback;
  };
}

async function setup(parentScript: Scripted[], options: { gated?: boolean; maxConcurrent?: number } = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'nb-subagents-'));
  const sessions = new JsonlSessionStore(join(dir, 'sessions'));
  const bus = new MessageBus();
  const parent = new FakeProvider(parentScript);
  const sub = new FakeProvider(Array.from({ length: 20 }, () => subagentReply));
  const work = workTool(options.gated ?? true);
  const subTools = new ToolRegistry();
  subTools.register(work.tool);
  let ids = 0;
  let loop: AgentLoop | undefined;
  const manager = new SubagentManager({
    sessions,
    createRunner: () =>
      new AgentRunner({ provider: sub, model: 'm', maxTokens: 100, tools: subTools, maxIterations: 5 }),
    systemPrompt: subagentSystemPrompt(dir),
    maxConcurrent: options.maxConcurrent ?? 1,
    report: followUpSink('loop', bus, () => {
      if (!loop) throw new Error('loop not built');
      return loop;
    }),
    newId: () => `sub${++ids}`,
    now: () => 5_000, // a stopped clock: /status durations are stable
  });
  const tools = new ToolRegistry();
  tools.register(createSpawnTool(manager));
  const runner = new AgentRunner({ provider: parent, model: 'm', maxTokens: 100, tools, maxIterations: 5 });
  loop = new AgentLoop({ sessions, context: new ContextBuilder({ workspace: dir }), runner, work: [manager] });
  const outbound: OutboundMessage[] = [];
  const drain = async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 0);
    for (;;) {
      const message = await bus.consumeOutbound(controller.signal).catch(() => undefined);
      if (!message) return outbound;
      outbound.push(message);
    }
  };
  const reports = () =>
    parent.requests.map((r) => String(r.messages.at(-1)?.content)).filter((c) => c.startsWith('[Subagent'));
  return { loop, manager, sessions, parent, sub, work, drain, reports };
}

const spawnBoth = {
  toolCalls: [call('spawn', { task: 'task A', label: 'A' }), call('spawn', { task: 'task B', label: 'B' })],
};

describe('subagents', () => {
  it('runs two spawned tasks one after the other and reports both results to the parent session', async () => {
    const { loop, manager, sessions, parent, work, drain, reports } = await setup([
      spawnBoth,
      { content: 'Both are on their way.' },
      parentReply({ content: 'unexpected' }),
      parentReply({ content: 'unexpected' }),
    ]);

    const output = await loop.processMessage(input('do A and B in the background'));
    expect(output.content).toBe('Both are on their way.');
    const spawned = parent.requests[1]?.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
    expect(spawned?.[0]).toMatch(/^Subagent \[A\] started, id sub1\./);
    expect(spawned?.[1]).toMatch(/^Subagent \[B\] queued \(number 1 in line\), id sub2\./);

    await until(() => work.log.includes('start A'));
    const session = await sessions.load(KEY);
    expect(manager.status(session)).toEqual(['Subagent A (sub1): running for 0 s', 'Subagent B (sub2): queued']);
    expect((await loop.processMessage(input('/status'))).content).toContain('Subagent B (sub2): queued');
    expect(work.log).toEqual(['start A']); // B waits for the only slot

    work.release('A');
    await until(() => work.log.includes('start B'));
    expect(work.log).toEqual(['start A', 'end A', 'start B']);
    work.release('B');
    await manager.idle();

    // The parent model saw each report in a later request and answered the user.
    expect(reports()).toEqual([
      expect.stringMatching(/^\[Subagent 'A' completed\]\n\nTask: task A\n\nResult:\nreport A\n/),
      expect.stringMatching(/^\[Subagent 'B' completed\]\n\nTask: task B\n\nResult:\nreport B\n/),
    ]);
    expect((await drain()).map((m) => `${m.channel}:${m.chatId} ${m.content}`)).toEqual([
      'cli:direct A is finished',
      'cli:direct B is finished',
    ]);
    const transcript = (await sessions.load(KEY)).messages.map((m) => m.role);
    expect(transcript.slice(-4)).toEqual(['user', 'assistant', 'user', 'assistant']);

    // Each subagent's tool calls and results are saved in its own session.
    const saved = await sessions.load('subagent:sub1');
    expect(saved.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(saved.messages[1]?.tool_calls?.[0]?.function.name).toBe('work');
    expect(saved.messages[2]?.content).toBe('worked on A');
    expect(saved.metadata.subagent).toMatchObject({ id: 'sub1', label: 'A', status: 'done', parent_session: KEY });
  });

  it('returns the result inline with wait: true, and reports nothing later', async () => {
    const { loop, manager, parent, drain, reports } = await setup(
      [
        { toolCalls: [call('spawn', { task: 'task C', label: 'C', wait: true })] },
        (request) => ({ content: `C said: ${String(request.messages.at(-1)?.content)}` }),
      ],
      { gated: false },
    );
    const output = await loop.processMessage(input('do C and tell me'));
    expect(output.content).toBe('C said: report C');
    await manager.idle();
    expect(reports()).toEqual([]);
    expect(parent.requests).toHaveLength(2);
    expect(await drain()).toEqual([]);
  });

  it('/stop cancels a session’s subagents, the running one and the queued one', async () => {
    const { loop, manager, sessions, work, drain, reports } = await setup([spawnBoth, { content: 'Started.' }]);
    await loop.processMessage(input('do A and B'));
    await until(() => work.log.includes('start A'));

    const stop = await loop.processMessage(input('/stop'));
    expect(stop.content).toBe('Stopped. Cancelled 2 subagents.');
    await manager.idle();

    expect(work.log).toEqual(['start A', 'cancelled A']);
    expect(reports()).toEqual([]);
    expect(await drain()).toEqual([]);
    expect((await sessions.load('subagent:sub1')).metadata.subagent).toMatchObject({ status: 'cancelled' });
    expect((await sessions.load('subagent:sub2')).messages).toEqual([]); // never started
    expect((await loop.processMessage(input('/stop'))).content).toBe('No active task to stop.');
  });

  it('gives subagents only the file, search, shell and web tools', () => {
    const parent = new ToolRegistry();
    for (const name of ['read_file', 'exec', 'web_fetch', 'message', 'spawn', 'cron', 'create_goal', 'mcp_x_y']) {
      parent.register(defineTool({ name, description: name, parameters: z.object({}), execute: async () => ok('') }));
    }
    expect(subagentToolRegistry(parent).names()).toEqual(['exec', 'read_file', 'web_fetch']);
  });
});

describe('subagents wired by createAgent', () => {
  let fake: FakeLLM | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  /** The fake LLM plays both parts: the subagent (by its system prompt) and the parent. */
  async function agentWith(bus?: MessageBus) {
    const isSubagent = (body: Record<string, unknown>) =>
      JSON.stringify((body.messages as unknown[])[0]).includes('# Subagent');
    const last = (body: Record<string, unknown>) => (body.messages as { role: string; content: unknown }[]).at(-1);
    const reply = (body: Record<string, unknown>) => {
      if (isSubagent(body)) return { text: 'There are 3 files.' };
      const message = last(body);
      if (message?.role === 'tool') return { text: 'Counting in the background.' };
      if (String(message?.content).startsWith("[Subagent 'counter' completed]")) return { text: 'You have 3 files.' };
      return {
        toolCalls: [{ name: 'spawn', arguments: { task: 'Count the files in the workspace', label: 'counter' } }],
      };
    };
    fake = await startFakeLLM(Array.from({ length: 8 }, () => reply));
    const home = await mkdtemp(join(tmpdir(), 'nb-subagents-home-'));
    const workspace = join(home, '.nanobot', 'workspace');
    await mkdir(workspace, { recursive: true });
    const configPath = join(home, '.nanobot', 'config.json');
    await writeFile(
      configPath,
      JSON.stringify({
        agents: { defaults: { workspace, provider: 'custom', model: 'test-model' } },
        providers: { custom: { apiKey: 'test-key', apiBase: `${fake.url}/v1` } },
        tools: { web: { enable: false } },
      }),
    );
    const loaded = await loadConfig({ configPath, home, env: {} });
    return createAgent(loaded, { env: {}, ...(bus ? { bus } : {}) });
  }

  const toolNames = (body: Record<string, unknown>) =>
    (body.tools as { function: { name: string } }[]).map((t) => t.function.name);

  it('runs the follow-up turn in the loop without a gateway (nanobot agent) and prints it via the bus', async () => {
    const agent = await agentWith();
    try {
      const output = await agent.loop.processMessage(input('how many files do I have?'));
      expect(output.content).toBe('Counting in the background.');
      await agent.subagents.idle();
      expect(await agent.bus.consumeOutbound()).toMatchObject({
        channel: 'cli',
        chatId: 'direct',
        content: 'You have 3 files.',
      });

      const subagentRequest = fake?.requests.find((r) => JSON.stringify(r.body.messages).includes('# Subagent'));
      const names = toolNames(subagentRequest?.body ?? {});
      expect(names).toEqual(expect.arrayContaining(['read_file', 'exec']));
      for (const hidden of ['message', 'spawn', 'cron', 'create_goal', 'update_goal'])
        expect(names).not.toContain(hidden);
      expect(toolNames(fake?.requests[0]?.body ?? {})).toEqual(expect.arrayContaining(['spawn', 'create_goal']));
    } finally {
      await agent.shutdown();
    }
  });

  it('publishes the report on the bus in the gateway, where the dispatcher answers in the origin chat', async () => {
    const bus = new MessageBus();
    const agent = await agentWith(bus);
    const dispatcher = new Dispatcher({ bus, loop: agent.loop, maxConcurrent: 2 });
    dispatcher.start();
    try {
      bus.publishInbound({ channel: 'telegram', senderId: 'u1', chatId: '42', content: 'how many files do I have?' });
      expect(await bus.consumeOutbound()).toMatchObject({ chatId: '42', content: 'Counting in the background.' });
      expect(await bus.consumeOutbound()).toMatchObject({
        channel: 'telegram',
        chatId: '42',
        content: 'You have 3 files.',
      });
      const parent = await agent.sessions.load('telegram:42');
      expect(parent.messages.some((m) => String(m.content).startsWith("[Subagent 'counter' completed]"))).toBe(true);
    } finally {
      await dispatcher.drain(1_000);
      await agent.shutdown();
    }
  });
});
