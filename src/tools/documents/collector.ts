/** Bounded text output: stops taking text at the cap and remembers that it did. */
export class TextCollector {
  private readonly parts: string[] = [];
  private length = 0;
  truncated = false;

  constructor(readonly limit: number) {}

  /** Adds `text` (after `separator` unless it is the first part); false once the cap is reached. */
  add(text: string, separator = '\n\n'): boolean {
    if (!text || this.truncated) return !this.truncated;
    const chunk = this.parts.length > 0 ? separator + text : text;
    const remaining = this.limit - this.length;
    if (chunk.length > remaining) {
      if (remaining > 0) this.parts.push(chunk.slice(0, remaining));
      this.length = this.limit;
      this.truncated = true;
      return false;
    }
    this.parts.push(chunk);
    this.length += chunk.length;
    return true;
  }

  render(): string {
    const text = this.parts.join('');
    return this.truncated ? `${text}… (truncated at ${this.limit} characters)` : text;
  }
}

/** One Markdown table cell: pipes escaped, line breaks as `<br>`, runs of spaces collapsed. */
function cell(text: string): string {
  return text
    .replace(/\\/g, '\\\\')
    .replace(/\|/g, '\\|')
    .replace(/[ \t]+/g, ' ')
    .trim()
    .replace(/\s*\n\s*/g, '<br>');
}

/** Rows as a Markdown table, the first row as its header; rows are padded to the widest. '' when there is no row. */
export function markdownTable(rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return '';
  const width = rows.reduce((widest, row) => Math.max(widest, row.length), 1);
  const line = (row: readonly string[]) =>
    `| ${Array.from({ length: width }, (_, i) => cell(row[i] ?? '')).join(' | ')} |`;
  const [header = [], ...body] = rows;
  return [line(header), `| ${Array.from({ length: width }, () => '---').join(' | ')} |`, ...body.map(line)].join('\n');
}
