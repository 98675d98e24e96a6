/** A scripted in-process LLMProvider that records every request. */
import type { ChatRequest, LLMProvider, LLMResponse, StreamEvent, ToolCall } from '../../src/providers/types.js';
import { EventStream } from '../../src/util/event-stream.js';

export type Scripted = Partial<LLMResponse> | ((request: ChatRequest) => Partial<LLMResponse>);

export class FakeProvider implements LLMProvider {
  readonly name = 'fake';
  readonly requests: ChatRequest[] = [];

  constructor(private readonly script: Scripted[]) {}

  stream(request: ChatRequest): EventStream<StreamEvent, LLMResponse> {
    this.requests.push(structuredClone({ ...request, signal: undefined }));
    const next = this.script.shift() ?? { content: '(script exhausted)' };
    const partial = typeof next === 'function' ? next(request) : next;
    const response: LLMResponse = {
      content: partial.content ?? null,
      toolCalls: partial.toolCalls ?? [],
      finishReason: partial.finishReason ?? ((partial.toolCalls?.length ?? 0) > 0 ? 'tool_calls' : 'stop'),
      usage: partial.usage ?? { promptTokens: 10, completionTokens: 5 },
      ...(partial.error ? { error: partial.error } : {}),
      ...(partial.reasoningContent ? { reasoningContent: partial.reasoningContent } : {}),
    };
    const stream = new EventStream<StreamEvent, LLMResponse>();
    if (response.content) stream.push({ type: 'text-delta', text: response.content });
    stream.end(response);
    return stream;
  }
}

let nextId = 0;
export function call(name: string, args: Record<string, unknown> | string = {}): ToolCall {
  nextId += 1;
  return {
    id: `call_${nextId}`,
    type: 'function',
    function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
  };
}
