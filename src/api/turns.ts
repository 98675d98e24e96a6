/**
 * Running API turns: one at a time per session, an ephemeral session seeded and deleted around its turn, and the
 * streaming writer that turns a turn's events into `text/event-stream` completion chunks.
 */
import type { ServerResponse } from 'node:http';
import type { AgentLoop, TurnOutput } from '../agent/loop.js';
import type { SessionStore } from '../session/types.js';
import { type ApiTurn, type CompletionIds, completionChunk, errorBody } from './completions.js';

type TurnEvents = Parameters<AgentLoop['processMessage']>[1];

/** One task at a time per key: an API call always gets its own turn, never joins a running one. */
export class KeyedQueue {
  private readonly chains = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const run = (this.chains.get(key) ?? Promise.resolve()).catch(() => undefined).then(task);
    this.chains.set(key, run);
    // Both ways: a plain .finally() would re-raise a failed turn where nobody handles it (the caller does).
    const forget = () => {
      if (this.chains.get(key) === run) this.chains.delete(key);
    };
    run.then(forget, forget);
    return run;
  }

  /** Keys with a queued or running task (for tests: a settled chain is forgotten). */
  get size(): number {
    return this.chains.size;
  }
}

/** Runs a turn through the loop, serialised per session; an ephemeral turn's session lives only for that turn. */
export class ApiTurnRunner {
  private readonly queue = new KeyedQueue();

  constructor(
    private readonly loop: Pick<AgentLoop, 'processMessage'>,
    private readonly sessions: Pick<SessionStore, 'load' | 'save' | 'delete'>,
  ) {}

  run(turn: ApiTurn, media: string[], signal: AbortSignal, events?: TurnEvents): Promise<TurnOutput> {
    return this.queue.run(turn.sessionKey, async () => {
      if (turn.ephemeral) await this.seed(turn);
      try {
        return await this.loop.processMessage(
          {
            channel: 'api',
            chatId: turn.sessionKey.slice('api:'.length),
            content: turn.text,
            sessionKey: turn.sessionKey,
            ...(media.length > 0 ? { media } : {}),
          },
          { signal, ...events },
        );
      } finally {
        if (turn.ephemeral) await this.sessions.delete(turn.sessionKey);
      }
    });
  }

  private async seed(turn: ApiTurn): Promise<void> {
    const session = await this.sessions.load(turn.sessionKey);
    session.messages.push(...turn.context);
    await this.sessions.save(session);
  }
}

/** Streams one turn as server-sent completion chunks, ending with the finish chunk and `[DONE]`. */
export async function streamTurn(
  res: Pick<ServerResponse, 'writeHead' | 'write' | 'end'>,
  ids: CompletionIds,
  signal: AbortSignal,
  timeoutS: number,
  run: (events: TurnEvents) => Promise<TurnOutput>,
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  const write = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  write(completionChunk(ids, { role: 'assistant', content: '' }));
  let streamed = '';
  const output = await run({
    onEvent: (event) => {
      if (event.type === 'text-delta') {
        streamed += event.text;
        write(completionChunk(ids, { content: event.text }));
      } else if (event.type === 'reasoning-delta') write(completionChunk(ids, { reasoning_content: event.text }));
    },
  });
  // Commands produce an answer without deltas; a streamed answer may also end differently than it began. A failed
  // one's content is only the text that streamed before the failure.
  const failure = modelFailure(output);
  if (!failure && output.content && !streamed.endsWith(output.content)) {
    write(completionChunk(ids, { content: streamed ? `\n\n${output.content}` : output.content }));
  }
  if (signal.aborted && signal.reason?.message === 'timeout') {
    write(errorBody(`the agent took longer than ${timeoutS} s`, 'timeout', 'timeout'));
  } else if (failure) write(errorBody(failure.message, failure.type, failure.code));
  write(completionChunk(ids, {}, finishOf(output), output.usage));
  res.end('data: [DONE]\n\n');
}

/** A turn that ended on a model failure (a stalled stream, a deadline, an upstream error), as an API error. */
export function modelFailure(
  output: TurnOutput,
): { status: number; message: string; type: string; code: string } | undefined {
  if (output.stopReason !== 'error' || !output.error) return undefined;
  const { kind, message } = output.error;
  return kind === 'timeout'
    ? { status: 504, message, type: 'timeout', code: kind }
    : { status: 502, message, type: 'upstream_error', code: kind };
}

export function finishOf(output: TurnOutput): string {
  return output.stopReason === 'max_iterations' ? 'length' : 'stop';
}
