/**
 * The tool contract. A tool declares a zod object schema for its arguments; the registry validates
 * model-supplied arguments against it and turns every failure into an error result the model can read.
 * Tools are made by factories that receive what they touch, so tests need no module mocks.
 */
import type { z } from 'zod';
import type { ContentPart } from '../providers/types.js';

export interface ToolResult {
  /** Text for the model, or text + images (e.g. read_file on a PNG). */
  content: string | ContentPart[];
  isError?: boolean;
}

export interface ToolContext {
  signal: AbortSignal;
  /** Session key of the turn (`channel:chat_id`), when there is one. */
  sessionKey?: string;
  channel?: string;
  chatId?: string;
  /** The platform thread of the turn's message, when it came from one. */
  threadId?: string;
}

// biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every argument shape
export type AnyToolSchema = z.ZodObject<any>;

export interface Tool<S extends AnyToolSchema = AnyToolSchema> {
  readonly name: string;
  readonly description: string;
  readonly parameters: S;
  /** True for tools with no side effects that can run in parallel with each other (reads, searches). */
  readonly concurrencySafe?: boolean;
  execute(args: z.infer<S>, ctx: ToolContext): Promise<ToolResult>;
}

export const ok = (content: string | ContentPart[]): ToolResult => ({ content });
export const fail = (message: string): ToolResult => ({
  content: message.startsWith('Error') ? message : `Error: ${message}`,
  isError: true,
});

/** Identity helper that keeps the schema's inferred argument type on `execute`. */
export function defineTool<S extends AnyToolSchema>(tool: Tool<S>): Tool<S> {
  return tool;
}
