/** Terminal output for the agent: errors with fixes, and Markdown rendering. */
import type { ProviderError } from '../providers/types.js';

/** One line saying what went wrong upstream and what to do about it. */
export function describeProviderError(error: ProviderError, provider: string): { message: string; hint: string } {
  const message = `${provider}: ${error.message}`;
  const hints: Record<ProviderError['kind'], string> = {
    auth: `Check providers.${provider}.apiKey in the config (or the provider's API key variable).`,
    quota: 'The account is out of credit or quota; top it up or switch provider/model.',
    rate_limit: 'The provider is rate-limiting; wait a moment and try again.',
    // A stall or the turn deadline names its own setting; a slow start is NANOBOT_LLM_TIMEOUT_S.
    timeout:
      'Try again; if the provider is just slow, raise the limit named above (NANOBOT_LLM_TIMEOUT_S for a slow start).',
    network: `Could not reach the provider; check the network and providers.${provider}.apiBase.`,
    server: 'The provider had an internal error; try again shortly.',
    context_overflow: 'The conversation is too long for the model; start a fresh one with /new.',
    bad_request: 'The provider rejected the request; check the model name and provider settings.',
    aborted: 'The request was cancelled.',
  };
  return { message, hint: hints[error.kind] };
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
