/**
 * What a turn's request costs before its history: the system prompt, the tool schemas and the new message. The
 * prompt and the tool set are the same turn after turn, and counting them (serialising every tool schema) cost more
 * than the rest of a turn's bookkeeping, so their estimates are kept: a tool set by its array (the registry builds a
 * new one when the tools change), a prompt by its exact text.
 */
import { contentText, estimateTextTokens, IMAGE_TOKENS } from '../memory/tokens.js';
import type { ChatMessage, ToolDefinition } from '../providers/types.js';

/** A handful of prompts at once at most (sessions with their own summaries); the oldest is dropped beyond that. */
const MAX_PROMPTS = 16;

export class FixedTokens {
  private readonly prompts = new Map<string, number>();
  private readonly toolSets = new WeakMap<readonly ToolDefinition[], number>();

  estimate(system: string, tools: readonly ToolDefinition[], user: ChatMessage): number {
    let systemTokens = this.prompts.get(system);
    if (systemTokens === undefined) {
      systemTokens = estimateTextTokens(system);
      if (this.prompts.size >= MAX_PROMPTS) this.prompts.delete(this.prompts.keys().next().value ?? '');
      this.prompts.set(system, systemTokens);
    }
    let toolTokens = this.toolSets.get(tools);
    if (toolTokens === undefined) {
      toolTokens = estimateTextTokens(JSON.stringify(tools));
      this.toolSets.set(tools, toolTokens);
    }
    const { text, images } = contentText(user.content);
    return systemTokens + toolTokens + estimateTextTokens(text) + images * IMAGE_TOKENS;
  }
}
