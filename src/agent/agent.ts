/**
 * What the wiring (src/app/agent.ts) builds for a surface: the loop with its provider, tools, sessions and memory.
 * The type lives here, below the surfaces, so a surface can hold an Agent without importing the wiring.
 */
import type { MessageBus } from '../bus/message-bus.js';
import type { ModelSettings } from '../config/model.js';
import type { McpManager } from '../mcp/manager.js';
import type { Consolidator } from '../memory/consolidator.js';
import type { LLMProvider } from '../providers/types.js';
import type { JsonlSessionStore } from '../session/jsonl-store.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { AgentLoop } from './loop.js';
import type { SubagentManager } from './subagents.js';

export interface Agent {
  loop: AgentLoop;
  model: ModelSettings;
  provider: LLMProvider;
  tools: ToolRegistry;
  sessions: JsonlSessionStore;
  /** Outbound messages the agent sends on its own (the `message` tool) arrive here. */
  bus: MessageBus;
  /** Summarises old turns into history.jsonl (the gateway's idle auto-compaction uses it too). */
  consolidator: Consolidator;
  /** Background tasks started with the `spawn` tool. */
  subagents: SubagentManager;
  /** The configured MCP servers and their state; absent when none are configured. */
  mcp?: McpManager;
  /** Ends background exec sessions, any command still running and the MCP servers; call before the process exits. */
  shutdown(): Promise<void>;
}
