/**
 * A strict checker for Slack mrkdwn as a message's `text`: `&`, `<` and `>` escaped except in Slack's own
 * `<…>` sequences (links, mentions) and a quote's leading `>`; code fences closed; no longer than Slack's
 * recommended 4,000 characters (it truncates at 40,000). And the text a user reads.
 */

const SEQUENCE = /^<(?:(?:https?|mailto):[^<>|\s]+(?:\|[^<>]*)?|[@#][A-Z0-9]+(?:\|[^<>]*)?|![\w^-]+(?:\|[^<>]*)?)>/;
const ENTITY = /^&(?:amp|lt|gt);/;
export const SLACK_RECOMMENDED_MAX = 4000;

export function assertSlackMrkdwn(text: string): void {
  if (text.length > SLACK_RECOMMENDED_MAX) throw new Error(`message is too long (${text.length} characters)`);
  if (!text.trim()) throw new Error('message is empty');
  const fences = text.match(/```/g)?.length ?? 0;
  if (fences % 2 !== 0) throw new Error('a code block is not closed');
  let lineStart = true;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '&' && !ENTITY.test(text.slice(i, i + 5))) throw new Error(`bare & at ${i}`);
    if (char === '<') {
      const sequence = SEQUENCE.exec(text.slice(i));
      if (!sequence) throw new Error(`bare < at ${i}: ${text.slice(i, i + 30)}`);
      i += sequence[0].length - 1;
      lineStart = false;
      continue;
    }
    if (char === '>' && !lineStart) throw new Error(`bare > at ${i}`);
    if (char === '\n') lineStart = true;
    else if (char !== ' ') lineStart = false;
  }
}

/** The text as Slack shows it: links as their labels, formatting marks and code fences removed, entities decoded. */
export function visibleMrkdwn(text: string): string {
  return text
    .split(/```\n?/)
    .map((segment, i) => (i % 2 === 1 ? segment.replace(/\n$/, '') : visibleInline(segment)))
    .join('')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function visibleInline(text: string): string {
  return text
    .replace(/<([^<>|]+)\|([^<>]*)>/g, (_, _target: string, label: string) => label)
    .replace(/<([^<>]+)>/g, (_, target: string) => target)
    .replace(/^> ?/gm, '')
    .replace(/`([^`]*)`/g, (_, code: string) => code.replace(/[*_~]/g, (mark) => `\uE000${mark}`))
    .replace(/(?<![\w*_~\uE000])[*_~]+(?=\S)|(?<=\S)(?<!\uE000)[*_~]+(?![\w*_~])/g, '')
    .replace(/\uE000/g, '');
}
