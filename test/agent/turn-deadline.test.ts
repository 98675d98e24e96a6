/**
 * The turn deadline (agents.defaults.turnTimeoutS) and the partial text of a failed stream (issue 16 item 3). The
 * deadline's timer is a manual one the test fires; the "model" and the tool hang until their signal aborts.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentRunner } from '../../src/agent/runner.js';
import type { ChatRequest, LLMProvider, LLMResponse, StreamEvent } from '../../src/providers/types.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, ok } from '../../src/tools/types.js';
import { EventStream } from '../../src/util/event-stream.js';
import { call, FakeProvider, type Scripted } from '../helpers/fake-provider.js';
import { ManualTimers } from '../helpers/manual-timers.js';

const DEADLINE_MESSAGE =
  /^The turn ran longer than 60 s and was stopped; set agents\.defaults\.turnTimeoutS to allow longer \(0 = no limit\)\.$/;

const input = [
  { role: 'system' as const, content: 'sys' },
  { role: 'user' as const, content: 'hi' },
];

/** Streams `text`, then nothing more until its request is aborted (a stream that trickles, then hangs). */
class HangingProvider implements LLMProvider {
  readonly name = 'hanging';
  readonly aborted: unknown[] = [];

  constructor(private readonly text = 'Working on it') {}

  stream(request: ChatRequest): EventStream<StreamEvent, LLMResponse> {
    const stream = new EventStream<StreamEvent, LLMResponse>();
    stream.push({ type: 'text-delta', text: this.text });
    request.signal?.addEventListener('abort', () => {
      this.aborted.push(request.signal?.reason);
      stream.end({
        content: this.text,
        toolCalls: [],
        finishReason: 'error',
        error: { kind: 'aborted', message: 'Request aborted.', retryable: false },
      });
    });
    return stream;
  }
}

/** A tool that runs until the turn's signal aborts. */
function blockingTools(started: () => void): ToolRegistry {
  const tools = new ToolRegistry();
  tools.register(
    defineTool({
      name: 'wait_forever',
      description: 'Blocks until cancelled',
      parameters: z.object({}),
      execute: (_args, ctx) =>
        new Promise((resolve) => {
          started();
          ctx.signal.addEventListener('abort', () => resolve(ok('cancelled')));
        }),
    }),
  );
  return tools;
}

function runner(provider: LLMProvider, timers: ManualTimers, tools = new ToolRegistry(), turnTimeoutMs = 60_000) {
  return new AgentRunner({ provider, model: 'm', maxTokens: 100, tools, maxIterations: 10, turnTimeoutMs, timers });
}

describe('the turn deadline', () => {
  it('stops a model stream that never ends, with an error that says what to set', async () => {
    const timers = new ManualTimers();
    const provider = new HangingProvider();
    const running = runner(provider, timers).run(input);
    expect(timers.delays).toEqual([60_000]);
    timers.fire();
    const result = await running;

    expect(provider.aborted).toHaveLength(1);
    expect(result.stopReason).toBe('error');
    expect(result.error).toMatchObject({ kind: 'timeout', retryable: false });
    expect(result.error?.message).toMatch(DEADLINE_MESSAGE);
    // What streamed before the deadline is the answer so far, and stays in the session.
    expect(result.content).toBe('Working on it');
    expect(result.messages).toEqual([{ role: 'assistant', content: 'Working on it' }]);
    expect(timers.armedCount).toBe(0);
  });

  it('stops a tool that runs past it and keeps the finished round', async () => {
    const timers = new ManualTimers();
    let toolStarted = false;
    const provider = new FakeProvider([{ toolCalls: [call('wait_forever')] }, { content: 'never asked' }]);
    const tools = blockingTools(() => {
      toolStarted = true;
    });
    const running = runner(provider, timers, tools).run(input);
    const end = Date.now() + 5_000;
    while (!toolStarted && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(toolStarted).toBe(true);
    timers.fire();
    const result = await running;

    expect(result.stopReason).toBe('error');
    expect(result.error?.message).toMatch(DEADLINE_MESSAGE);
    expect(result.messages.map((m) => m.role)).toEqual(['assistant', 'tool']);
    expect(provider.requests).toHaveLength(1);
  });

  it('leaves /stop a plain abort (no error) while a deadline is set', async () => {
    const timers = new ManualTimers();
    const controller = new AbortController();
    const running = runner(new HangingProvider(), timers).run(input, { signal: controller.signal });
    controller.abort(new Error('stopped by /stop'));
    const result = await running;
    expect(result.stopReason).toBe('aborted');
    expect(result.error?.kind ?? 'aborted').toBe('aborted');
    expect(result.messages).toEqual([]);
  });

  it('sets no timer when turnTimeoutS is 0', async () => {
    const timers = new ManualTimers();
    const result = await runner(new FakeProvider([{ content: 'hello' }]), timers, new ToolRegistry(), 0).run(input);
    expect(result.content).toBe('hello');
    expect(timers.delays).toEqual([]);
  });
});

describe('a model response that fails after text streamed', () => {
  const stalled: Scripted = {
    content: 'The first half of the answer',
    finishReason: 'error',
    error: { kind: 'timeout', message: "The model's stream stalled for 90 s", retryable: true },
  };

  it('ends the run with the error and keeps the partial text as the answer so far', async () => {
    const result = await new AgentRunner({
      provider: new FakeProvider([stalled]),
      model: 'm',
      maxTokens: 100,
      tools: new ToolRegistry(),
      maxIterations: 10,
    }).run(input);
    expect(result.stopReason).toBe('error');
    expect(result.error?.kind).toBe('timeout');
    expect(result.content).toBe('The first half of the answer');
    expect(result.messages).toEqual([{ role: 'assistant', content: 'The first half of the answer' }]);
  });
});
