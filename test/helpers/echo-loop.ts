/** An agent loop around a provider, with one `echo` tool and its sessions in a throwaway folder. */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { ContextBuilder } from '../../src/agent/context.js';
import { AgentLoop } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import type { LLMProvider } from '../../src/providers/types.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, ok } from '../../src/tools/types.js';

export async function makeLoop(provider: LLMProvider) {
  const dir = await mkdtemp(join(tmpdir(), 'nb-gw-'));
  const sessions = new JsonlSessionStore(join(dir, 'sessions'));
  const tools = new ToolRegistry();
  tools.register(
    defineTool({
      name: 'echo',
      description: 'Echo',
      parameters: z.object({ text: z.string() }),
      execute: async ({ text }) => ok(text),
    }),
  );
  const runner = new AgentRunner({ provider, model: 'm', maxTokens: 100, tools, maxIterations: 5 });
  const loop = new AgentLoop({ sessions, context: new ContextBuilder({ workspace: dir }), runner });
  return { loop, sessions, dir };
}
