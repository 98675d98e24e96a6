/**
 * A turn that throws (its session cannot be saved) still settles every message that was waiting on it: a message
 * folded into the turn fails with it, a message queued behind it runs as the next turn, and the session is free.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ContextBuilder } from '../../src/agent/context.js';
import { AgentLoop, type TurnOutput } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import type { Session } from '../../src/session/types.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, ok } from '../../src/tools/types.js';
import { call, FakeProvider, type Scripted } from '../helpers/fake-provider.js';

/** A store whose next `failing` saves fail as on a full disk. */
class FullDiskStore extends JsonlSessionStore {
  failing = 0;
  override save(session: Session): Promise<void> {
    if (this.failing > 0) {
      this.failing -= 1;
      return Promise.reject(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
    }
    return super.save(session);
  }
}

function gate(): { wait: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

async function setup(script: Scripted[], tools: Parameters<ToolRegistry['register']>[0][] = []) {
  const dir = await mkdtemp(join(tmpdir(), 'nb-loop-fail-'));
  const sessions = new FullDiskStore(join(dir, 'sessions'));
  const registry = new ToolRegistry();
  for (const tool of tools) registry.register(tool);
  const runner = new AgentRunner({
    provider: new FakeProvider(script),
    model: 'm',
    maxTokens: 100,
    tools: registry,
    maxIterations: 5,
  });
  const loop = new AgentLoop({ sessions, context: new ContextBuilder({ workspace: dir }), runner });
  return { loop, sessions };
}

const input = (content: string) => ({ channel: 'cli', chatId: 'direct', content });

/**
 * The promise's outcome, or 'pending' when it never settles. The 10 s bound is a failure guard for that bug (a
 * message left unanswered), not a claim about speed: a correct run settles as soon as the turn's work is done.
 */
async function outcome(promise: Promise<TurnOutput>): Promise<string> {
  const marker = Symbol('pending');
  const settled = await Promise.race([
    promise.then(
      (output) => `answered: ${output.content}`,
      (err: unknown) => `failed: ${(err as Error).message}`,
    ),
    new Promise<symbol>((resolve) => setTimeout(resolve, 10_000, marker).unref()),
  ]);
  return typeof settled === 'symbol' ? 'pending' : settled;
}

describe('AgentLoop: a turn that throws', () => {
  it('runs a message queued behind it as the next turn, and frees the session', async () => {
    let late: Promise<TurnOutput> | undefined;
    const { loop, sessions } = await setup([
      () => {
        // Arrives during the final model call (queued, not injected); the final save then fails.
        late = loop.processMessage(input('one more thing'));
        sessions.failing = 1;
        return { content: 'an answer that cannot be saved' };
      },
      { content: 'second answer' },
    ]);
    await expect(loop.processMessage(input('question'))).rejects.toThrow(/ENOSPC/);
    expect(late).toBeDefined();
    expect(await outcome(late as Promise<TurnOutput>)).toBe('answered: second answer');
    expect(loop.isActive('cli:direct')).toBe(false);
  });

  it('fails a message folded into it with its error instead of leaving it pending', async () => {
    const started = gate();
    const release = gate();
    const slow = defineTool({
      name: 'slow',
      description: 'waits',
      parameters: z.object({}),
      execute: async () => {
        started.open();
        await release.wait;
        return ok('slow done');
      },
    });
    const { loop, sessions } = await setup(
      [
        { toolCalls: [call('slow')] },
        () => {
          sessions.failing = 10; // every save from here fails
          return { content: 'answered both, but cannot save' };
        },
      ],
      [slow],
    );
    const first = loop.processMessage(input('start a long task'));
    await started.wait;
    const second = loop.processMessage(input('also, use metric units'));
    release.open();
    expect(await outcome(first)).toBe('failed: ENOSPC: no space left on device, write');
    expect(await outcome(second)).toBe('failed: ENOSPC: no space left on device, write');
    expect(loop.isActive('cli:direct')).toBe(false);
  });
});
