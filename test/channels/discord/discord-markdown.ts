/**
 * What a Discord message must be (at most 2000 characters, not blank, every code block closed, since an open fence
 * swallows the rest of the message), and the text a user reads once Discord has rendered the Markdown.
 */

export function assertDiscordMessage(text: string): void {
  if (text.length > 2000) throw new Error(`message is too long (${text.length} > 2000)`);
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

export function visibleText(text: string): string {
  const out: string[] = [];
  let fence: number | undefined;
  for (const line of text.split('\n')) {
    const run = /^\s*(`{3,})/.exec(line)?.[1]?.length;
    if (fence === undefined && run !== undefined) {
      fence = run;
      continue;
    }
    if (fence !== undefined) {
      if (run !== undefined && run >= fence && /^\s*`+\s*$/.test(line)) fence = undefined;
      else out.push(line);
      continue;
    }
    out.push(visibleLine(line));
  }
  return out.join('\n').trim();
}

function visibleLine(line: string): string {
  const kept: string[] = [];
  const keep = (value: string) => `\u0000${kept.push(value) - 1}\u0000`;
  return line
    .replace(/^(?:#{1,3} |-# |> )/, '')
    .replace(/(`+) ?(.+?) ?\1/g, (_, _run, code: string) => keep(code))
    .replace(/\\(.)/g, (_, char: string) => keep(char))
    .replace(/\[([^\]]*)\]\(<?[^)>]*>?\)/g, '$1')
    .replace(/\*\*|__|~~|\|\||[*_]/g, '')
    .replace(/\u0000(\d+)\u0000/g, (_, index: string) => kept[Number(index)] ?? '');
}
