/**
 * WeChat's client shows Markdown, but a bare `<` outside code hides the rest of the message and `~~` shows as is:
 * outside code, angle brackets become their full-width forms (same length, so a part stays within its limit) and
 * `[text](<url>)` loses the brackets the Markdown writer put round the address.
 */
export function sanitizeForWeixin(text: string): string {
  return text
    .split(/(```[\s\S]*?```|`[^`\n]*`)/)
    .map((piece, i) =>
      i % 2 === 1
        ? piece
        : piece
            .replace(/\]\(<([^<>\s]*)>\)/g, ']($1)')
            .replace(/~~/g, '')
            .replace(/</g, '＜')
            .replace(/>/g, '＞'),
    )
    .join('');
}
