import { describe, expect, it } from 'vitest';
import type { TurnOutput } from '../../src/agent/loop-types.js';
import type { ApiTurn, CompletionIds } from '../../src/api/completions.js';
import { ApiTurnRunner, KeyedQueue, modelFailure, streamTurn } from '../../src/api/turns.js';

const usage = { promptTokens: 1, completionTokens: 2, totalTokens: 3 } as TurnOutput['usage'];
const output = (over: Partial<TurnOutput> = {}): TurnOutput => ({
  content: 'hello',
  sessionKey: 'api:default',
  stopReason: 'completed' as TurnOutput['stopReason'],
  usage,
  ...over,
});

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('KeyedQueue', () => {
  it('runs one task at a time per key, other keys alongside, and forgets settled chains (also failed ones)', async () => {
    const queue = new KeyedQueue();
    const order: string[] = [];
    const first = gate();
    const a1 = queue.run('a', async () => {
      order.push('a1 start');
      await first.opened;
      order.push('a1 end');
      throw new Error('a1 failed');
    });
    const a2 = queue.run('a', async () => order.push('a2'));
    const b1 = queue.run('b', async () => order.push('b1'));
    await b1;
    expect(order).toEqual(['a1 start', 'b1']);
    first.open();
    await expect(a1).rejects.toThrow('a1 failed');
    await a2;
    expect(order).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
    await Promise.resolve();
    expect(queue.size).toBe(0);
  });
});

describe('ApiTurnRunner', () => {
  const turn = (over: Partial<ApiTurn> = {}): ApiTurn => ({
    sessionKey: 'api:s1',
    ephemeral: false,
    text: 'hi',
    images: [],
    context: [],
    ...over,
  });

  function fakes() {
    const calls: string[] = [];
    const saved: unknown[] = [];
    const session = { key: 'api:s1', messages: [] as unknown[] };
    const loop = {
      processMessage: async (msg: { chatId: string; content: string; media?: string[] }) => {
        calls.push(`turn ${msg.chatId} ${msg.content} media=${msg.media?.length ?? 'none'}`);
        return output();
      },
    };
    const sessions = {
      load: async () => session,
      save: async (s: unknown) => {
        saved.push(structuredClone(s));
        calls.push('save');
      },
      delete: async (key: string) => {
        calls.push(`delete ${key}`);
      },
    };
    return { calls, saved, loop, sessions };
  }

  it('a kept session: one turn, no seeding, no deletion; media only when there is some', async () => {
    const f = fakes();
    const runner = new ApiTurnRunner(f.loop as never, f.sessions as never);
    await runner.run(turn(), [], new AbortController().signal);
    await runner.run(turn(), ['/m/a.png'], new AbortController().signal);
    expect(f.calls).toEqual(['turn s1 hi media=none', 'turn s1 hi media=1']);
  });

  it('an ephemeral session is seeded with its context before the turn and deleted after it, also when it fails', async () => {
    const f = fakes();
    const context = [{ role: 'user' as const, content: 'earlier' }];
    const runner = new ApiTurnRunner(f.loop as never, f.sessions as never);
    await runner.run(turn({ ephemeral: true, context }), [], new AbortController().signal);
    expect(f.calls).toEqual(['save', 'turn s1 hi media=none', 'delete api:s1']);
    expect(f.saved).toEqual([{ key: 'api:s1', messages: context }]);

    f.calls.length = 0;
    f.loop.processMessage = async () => {
      throw new Error('boom');
    };
    await expect(runner.run(turn({ ephemeral: true }), [], new AbortController().signal)).rejects.toThrow('boom');
    expect(f.calls).toEqual(['save', 'delete api:s1']);
  });
});

describe('streamTurn', () => {
  const ids: CompletionIds = { id: 'chatcmpl-1', created: 1, model: 'm' } as CompletionIds;

  function fakeRes() {
    const frames: string[] = [];
    const res = {
      writeHead: () => res,
      write: (text: string) => frames.push(text) > 0,
      end: (text: string) => frames.push(text),
    };
    const events = () =>
      frames.map((frame) => frame.replace(/^data: /, '').trim()).map((d) => (d === '[DONE]' ? d : JSON.parse(d)));
    return { res: res as never, events };
  }

  it('streams deltas, adds an answer that did not stream, and ends with the finish chunk and [DONE]', async () => {
    const { res, events } = fakeRes();
    await streamTurn(res, ids, new AbortController().signal, 5, async (ev) => {
      ev?.onEvent?.({ type: 'text-delta', text: 'he' } as never);
      ev?.onEvent?.({ type: 'reasoning-delta', text: 'think' } as never);
      return output({ content: 'final' });
    });
    const all = events();
    expect(all.map((e) => (e === '[DONE]' ? e : e.choices?.[0]?.delta))).toEqual([
      { role: 'assistant', content: '' },
      { content: 'he' },
      { reasoning_content: 'think' },
      { content: '\n\nfinal' },
      {},
      '[DONE]',
    ]);
    expect(all[4].choices[0].finish_reason).toBe('stop');
  });

  it('a model failure is written as an error event, not as content; a timeout as a timeout error', async () => {
    const failed = fakeRes();
    await streamTurn(failed.res, ids, new AbortController().signal, 5, async () =>
      output({
        content: 'partial',
        stopReason: 'error',
        error: { kind: 'stalled', message: 'stream stalled' } as never,
      }),
    );
    const errors = failed.events().filter((e) => e !== '[DONE]' && e.error);
    expect(errors.map((e) => e.error.code)).toEqual(['stalled']);
    expect(failed.events().some((e) => e !== '[DONE]' && e.choices?.[0]?.delta?.content === 'partial')).toBe(false);

    const timedOut = fakeRes();
    const abort = new AbortController();
    abort.abort(new Error('timeout'));
    await streamTurn(timedOut.res, ids, abort.signal, 7, async () => output({ content: '' }));
    const timeout = timedOut.events().find((e) => e !== '[DONE]' && e.error);
    expect(timeout.error).toMatchObject({ code: 'timeout', message: 'the agent took longer than 7 s' });
  });
});

describe('modelFailure', () => {
  it('maps a timeout to 504, other model errors to 502, and a good turn to nothing', () => {
    expect(modelFailure(output())).toBeUndefined();
    expect(
      modelFailure(output({ stopReason: 'error', error: { kind: 'timeout', message: 't' } as never }))?.status,
    ).toBe(504);
    expect(modelFailure(output({ stopReason: 'error', error: { kind: 'http', message: 'h' } as never }))?.status).toBe(
      502,
    );
  });
});
