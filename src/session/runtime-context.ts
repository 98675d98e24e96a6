/**
 * The runtime-context block at the end of a stored user message (time, channel, chat id; written by the
 * ContextBuilder). Its marker lives here, below every reader: history display, consolidation and history search all
 * strip it, and none of them may import the prompt builder above them.
 */
export const RUNTIME_MARKER = '[Runtime Context]';

/** Removes the runtime block from stored user text, for display. */
export function stripRuntimeContext(text: string): string {
  const at = text.lastIndexOf(`\n\n${RUNTIME_MARKER}`);
  return at === -1 ? text : text.slice(0, at);
}
