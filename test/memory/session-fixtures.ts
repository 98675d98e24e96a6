/** Builders for long sessions: whole turns (user → assistant tool call → tool result → assistant answer). */
import type { ChatMessage, LLMProvider, LLMResponse, StreamEvent } from '../../src/providers/types.js';
import { newSession, type Session } from '../../src/session/types.js';
import { EventStream } from '../../src/util/event-stream.js';

/** One turn of four messages; `n` makes every text unique and searchable. */
export function turn(n: number, size = 300): ChatMessage[] {
  const at = new Date(Date.UTC(2026, 0, 1, 0, n)).toISOString();
  const pad = (text: string) => text.padEnd(size, '.');
  const id = `call_${String(n).padStart(5, '0')}`; // fixed width: every turn costs the same tokens
  return [
    { role: 'user', content: pad(`question ${n}`), timestamp: at },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } }],
      timestamp: at,
    },
    { role: 'tool', tool_call_id: id, name: 'read_file', content: pad(`file body ${n}`), timestamp: at },
    { role: 'assistant', content: pad(`answer ${n}`), timestamp: at },
  ];
}

export function sessionWithTurns(turns: number, key = 'cli:direct', size = 300): Session {
  const session = newSession(key);
  for (let n = 0; n < turns; n++) session.messages.push(...turn(n, size));
  return session;
}

/** A provider whose responses wait for `release()`, and which records how many calls overlapped. */
export class GatedProvider implements LLMProvider {
  readonly name = 'gated';
  calls = 0;
  inFlight = 0;
  maxInFlight = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly reply: (call: number) => Partial<LLMResponse>) {}

  stream(): EventStream<StreamEvent, LLMResponse> {
    const stream = new EventStream<StreamEvent, LLMResponse>();
    const call = ++this.calls;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    this.waiters.push(() => {
      this.inFlight--;
      const partial = this.reply(call);
      stream.end({ content: partial.content ?? null, toolCalls: [], finishReason: partial.finishReason ?? 'stop' });
    });
    return stream;
  }

  /** Answers every waiting call. */
  release(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const answer of waiting) answer();
  }

  get waiting(): number {
    return this.waiters.length;
  }
}

export const tick = () => new Promise((resolve) => setTimeout(resolve, 5));
