/** What a turn's request costs before its history (system prompt, tool schemas, the new message): counted once. */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextBuilder } from '../../src/agent/context.js';
import { AgentLoop } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import { type ConsolidationReport, Consolidator } from '../../src/memory/consolidator.js';
import { HistoryStore } from '../../src/memory/history.js';
import { estimateTextTokens } from '../../src/memory/tokens.js';
import type { ToolDefinition } from '../../src/providers/types.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import type { Session } from '../../src/session/types.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { FakeProvider } from '../helpers/fake-provider.js';

/** A consolidator that records the fixed cost the loop reports each turn (and never needs to compact). */
class RecordingConsolidator extends Consolidator {
  readonly reported: number[] = [];
  override async needsBlocking(_session: Session, systemPromptTokens: number): Promise<boolean> {
    this.reported.push(systemPromptTokens);
    return false;
  }
  override async maybeConsolidate(session: Session): Promise<ConsolidationReport> {
    const { lastConsolidated } = session;
    return { rounds: 0, llmCalls: 0, rawArchives: 0, tokensBefore: 0, tokensAfter: 0, lastConsolidated };
  }
}

/** A tool definition that counts how often it is serialised. */
function countedTool(name: string, counter: { serialised: number }): ToolDefinition {
  const definition: ToolDefinition = {
    type: 'function',
    function: { name, description: `The ${name} tool.`, parameters: { type: 'object', properties: {} } },
  };
  return {
    ...definition,
    toJSON() {
      counter.serialised += 1;
      return definition;
    },
  } as ToolDefinition;
}

async function setup() {
  const workspace = await mkdtemp(join(tmpdir(), 'nb-fixed-'));
  const sessions = new JsonlSessionStore(join(workspace, 'sessions'));
  const provider = new FakeProvider(Array.from({ length: 6 }, () => ({ content: 'ok' })));
  const history = new HistoryStore(workspace);
  const consolidator = new RecordingConsolidator({
    provider,
    model: 'm',
    history,
    contextWindowTokens: 200_000,
    maxTokens: 1000,
    persist: (s) => sessions.save(s),
  });
  const counter = { serialised: 0 };
  let definitions = [countedTool('alpha', counter)];
  const runner = new AgentRunner({ provider, model: 'm', maxTokens: 100, tools: new ToolRegistry(), maxIterations: 2 });
  const context = new ContextBuilder({ workspace, history });
  const loop = new AgentLoop({ sessions, context, runner, consolidator, toolDefinitions: () => definitions });
  const turn = (content: string) => loop.processMessage({ channel: 'cli', chatId: 'direct', content });
  const setTools = (next: ToolDefinition[]) => {
    definitions = next;
  };
  return { consolidator, counter, turn, setTools, context, provider };
}

describe('the fixed token cost of a turn', () => {
  it('is the system prompt, the tool schemas and the message, with the schemas serialised once per tool set', async () => {
    const { consolidator, counter, turn, setTools, context, provider } = await setup();
    await turn('first question');
    await turn('second question');
    await turn('third question');
    expect(counter.serialised).toBe(1);

    const system = context.buildSystemPrompt({});
    const toolTokens = estimateTextTokens(JSON.stringify([countedTool('alpha', { serialised: 0 })]));
    // The new message as the model got it (with its runtime context).
    const user = (turnIndex: number) =>
      estimateTextTokens(String(provider.requests[turnIndex]?.messages.at(-1)?.content ?? ''));
    expect(consolidator.reported[0]).toBe(estimateTextTokens(system) + toolTokens + user(0));
    // Same prompt and tools: only the message part changes.
    expect(consolidator.reported[1]! - consolidator.reported[0]!).toBe(user(1) - user(0));

    // A new tool set (an MCP server connected) is counted anew, once.
    setTools([countedTool('alpha', counter), countedTool('beta', counter)]);
    await turn('fourth question');
    await turn('fifth question');
    expect(counter.serialised).toBe(3);
    expect(consolidator.reported[3]!).toBeGreaterThan(consolidator.reported[2]!);
  });
});
