/**
 * What a Mattermost post must be (at most 16,383 characters, not blank, every code block closed, since an open fence
 * swallows the rest of the post), and the text a user reads once the Markdown is rendered (as Discord's).
 */
import { visibleText } from '../discord/discord-markdown.js';
import { MAX_POST_RUNES } from './fake-mattermost.js';

export function assertMattermostPost(text: string): void {
  if ([...text].length > MAX_POST_RUNES) throw new Error(`post is too long (${text.length} > ${MAX_POST_RUNES})`);
  if (!text.trim()) throw new Error('post is empty');
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
