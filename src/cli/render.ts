/** Terminal output for the agent: errors with fixes, and Markdown rendering. */
import { providerErrorHint } from '../providers/errors.js';
import type { ProviderError } from '../providers/types.js';

/** One line saying what went wrong upstream and what to do about it. */
export function describeProviderError(error: ProviderError, provider: string): { message: string; hint: string } {
  return { message: `${provider}: ${error.message}`, hint: providerErrorHint(error.kind, provider) };
}

/** Renders Markdown for a terminal of the given width (marked + marked-terminal, loaded on first use). */
export async function renderMarkdown(text: string, width: number): Promise<string> {
  const [{ Marked }, { markedTerminal }] = await Promise.all([import('marked'), import('marked-terminal')]);
  const marked = new Marked(markedTerminal({ width, reflowText: true }));
  const rendered = await marked.parse(text);
  return rendered.replace(/\n+$/, '');
}

/** Number of terminal rows `text` occupies at `columns` (for replacing streamed text in place). */
export function rowsOf(text: string, columns: number): number {
  const plain = text.replace(/\x1b\[[0-9;]*m/g, '');
  return plain.split('\n').reduce((rows, line) => rows + Math.max(1, Math.ceil(line.length / columns)), 0);
}

/**
 * Removes terminal control sequences from model text before it reaches the terminal: a file or web page the model
 * echoes could otherwise move the cursor, retitle the window or write the clipboard (OSC 52). Keeps \n and \t.
 */
export function sanitizeForTerminal(text: string): string {
  return text
    .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g, '') // OSC … BEL/ST
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '') // CSI
    .replace(/[\x00-\x08\x0b-\x1f\x7f\x9b]/g, '');
}
