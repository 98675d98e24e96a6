/**
 * What a WeCom stream or markdown message must be (at most 20480 bytes of UTF-8, not blank, every code block closed,
 * since an open fence swallows the rest), and the text a user reads once the Markdown is rendered.
 */
import { visibleText } from '../discord/discord-markdown.js';

export function assertWecomMarkdown(text: string): void {
  const bytes = Buffer.byteLength(text);
  if (bytes > 20480) throw new Error(`message is too long (${bytes} bytes > 20480)`);
  if (!text.trim()) throw new Error('message is empty');
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
