import { MessageBus } from '../../src/bus/message-bus.js';
import { OutboundRouter } from '../../src/channels/router.js';
import { Dispatcher } from '../../src/gateway/dispatcher.js';
import type { ChatRequest, LLMProvider, LLMResponse, StreamEvent } from '../../src/providers/types.js';
import { EventStream } from '../../src/util/event-stream.js';
import { makeLoop } from '../helpers/echo-loop.js';
import { TestChannel } from './test-channel.js';

export { makeLoop };

export interface ProviderCall {
  /** The `msg:<id>` marker of the newest user message. */
  marker: string;
  start: number;
  end: number;
  aborted: boolean;
}

export type Reply = (marker: string, request: ChatRequest) => Partial<LLMResponse>;

export class LatencyProvider implements LLMProvider {
  readonly name = 'latency';
  readonly calls: ProviderCall[] = [];
  private running = 0;
  peak = 0;

  constructor(
    private readonly delayMs: number | ((marker: string) => number),
    private readonly reply: Reply = (marker) => ({ content: `reply ${marker}` }),
  ) {}

  stream(request: ChatRequest): EventStream<StreamEvent, LLMResponse> {
    const stream = new EventStream<StreamEvent, LLMResponse>();
    const marker = markerOf(request);
    const call: ProviderCall = { marker, start: performance.now(), end: 0, aborted: false };
    this.calls.push(call);
    this.running += 1;
    this.peak = Math.max(this.peak, this.running);
    const finish = (response: LLMResponse) => {
      call.end = performance.now();
      this.running -= 1;
      stream.end(response);
    };
    const delay = typeof this.delayMs === 'number' ? this.delayMs : this.delayMs(marker);
    const timer = setTimeout(() => {
      request.signal?.removeEventListener('abort', onAbort);
      const partial = this.reply(marker, request);
      finish({
        content: partial.content ?? null,
        toolCalls: partial.toolCalls ?? [],
        finishReason: partial.finishReason ?? ((partial.toolCalls?.length ?? 0) > 0 ? 'tool_calls' : 'stop'),
        usage: { promptTokens: 10, completionTokens: 5 },
        ...(partial.error ? { error: partial.error } : {}),
      });
    }, delay);
    const onAbort = () => {
      clearTimeout(timer);
      call.aborted = true;
      finish({
        content: null,
        toolCalls: [],
        finishReason: 'error',
        error: { kind: 'aborted', message: 'aborted', retryable: false },
      });
    };
    if (request.signal?.aborted) onAbort();
    else request.signal?.addEventListener('abort', onAbort, { once: true });
    return stream;
  }

  callsFor(prefix: string): ProviderCall[] {
    return this.calls.filter((c) => c.marker.startsWith(prefix));
  }
}

function markerOf(request: ChatRequest): string {
  const users = request.messages.filter((m) => m.role === 'user');
  const text = JSON.stringify(users.at(-1)?.content ?? '');
  return /msg:([\w-]+)/.exec(text)?.[1] ?? '?';
}

/** Bus + dispatcher + outbound router + test channel around a loop with the given provider. */
export async function makeDispatcher(provider: LLMProvider, maxConcurrent: number, joinRunningTurns = false) {
  const { loop, sessions } = await makeLoop(provider);
  const bus = new MessageBus();
  const channel = new TestChannel();
  await channel.start(bus);
  const dispatcher = new Dispatcher({ bus, loop, maxConcurrent, joinRunningTurns });
  const router = new OutboundRouter({ bus, channels: [channel] });
  dispatcher.start();
  router.start();
  const stop = async () => {
    await dispatcher.drain(1_000);
    await router.stop(100);
  };
  return { bus, channel, dispatcher, loop, sessions, stop };
}

/** True when the two time intervals overlap. */
export function overlaps(a: ProviderCall, b: ProviderCall): boolean {
  return a.start < b.end && b.start < a.end;
}
