/**
 * A provider wrapper that stops Dream once its requests have used a token budget (prompt + completion, summed over
 * every request). A runaway Dream once burned more than 10M tokens in 23 minutes; the iteration cap alone does not
 * bound cost, because each request re-sends the whole growing conversation.
 */
import type { LLMProvider, LLMResponse, ResponseStream, StreamEvent } from '../providers/types.js';
import { EventStream } from '../util/event-stream.js';

export class TokenBudgetProvider implements LLMProvider {
  readonly name: string;
  private used = 0;
  private refused = false;

  constructor(
    private readonly inner: LLMProvider,
    readonly limit: number,
  ) {
    this.name = inner.name;
  }

  get tokensUsed(): number {
    return this.used;
  }

  /** True once a request was refused because the budget was spent. */
  get exhausted(): boolean {
    return this.refused;
  }

  stream(request: Parameters<LLMProvider['stream']>[0]): ResponseStream {
    if (this.used >= this.limit) {
      this.refused = true;
      const refusal = new EventStream<StreamEvent, LLMResponse>();
      refusal.end({
        content: null,
        toolCalls: [],
        finishReason: 'error',
        error: {
          kind: 'quota',
          message: `Dream token budget exhausted: ${this.used} of ${this.limit} tokens used.`,
          retryable: false,
        },
      });
      return refusal;
    }
    const inner = this.inner.stream(request);
    return EventStream.from<StreamEvent, LLMResponse>(
      async (out) => {
        for await (const event of inner) out.push(event);
        const response = await inner.result();
        this.used += (response.usage?.promptTokens ?? 0) + (response.usage?.completionTokens ?? 0);
        return response;
      },
      (error) => ({
        content: null,
        toolCalls: [],
        finishReason: 'error',
        error: { kind: 'server', message: error instanceof Error ? error.message : String(error), retryable: false },
      }),
    );
  }
}
