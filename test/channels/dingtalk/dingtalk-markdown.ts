/**
 * What a DingTalk markdown message must be (within the channel's 3,800 characters, under DingTalk's ~4,000, not
 * blank, every code block closed), and the text a user reads once the Markdown is rendered (as Discord's).
 */
import { visibleText } from '../discord/discord-markdown.js';

export const MAX_MARKDOWN_CHARS = 4_000;

export function assertDingtalkMarkdown(text: string): void {
  if (text.length > MAX_MARKDOWN_CHARS) throw new Error(`a DingTalk message of ${text.length} characters`);
  if (!text.trim()) throw new Error('the message is empty');
  let fence: number | undefined;
  for (const line of text.split('\n')) {
    const run = /^\s*(`{3,})/.exec(line)?.[1]?.length;
    if (run === undefined) continue;
    if (fence === undefined) fence = run;
    else if (run >= fence && /^\s*`+\s*$/.test(line)) fence = undefined;
  }
  if (fence !== undefined) throw new Error('a code block is not closed');
}

export { visibleText };
