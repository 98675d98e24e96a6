/**
 * A small line diff (LCS over the lines between the common prefix and suffix) and unified-diff rendering, for
 * `/dream-log <sha>` and Dream's commit messages. No installed package offers a two-way line diff. Memory files are
 * a few hundred lines, so the quadratic table is cheap; past a size cap the changed middle is shown as replaced.
 */

export type DiffOp = { kind: ' ' | '-' | '+'; line: string };

const MAX_TABLE_CELLS = 4_000_000;
const CONTEXT_LINES = 3;

/** Lines of a text; a final newline does not make an extra empty line. */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

export function diffLines(before: string[], after: string[]): DiffOp[] {
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start++;
  let endBefore = before.length;
  let endAfter = after.length;
  while (endBefore > start && endAfter > start && before[endBefore - 1] === after[endAfter - 1]) {
    endBefore--;
    endAfter--;
  }
  const same = (lines: string[]): DiffOp[] => lines.map((line) => ({ kind: ' ', line }));
  return [
    ...same(before.slice(0, start)),
    ...diffMiddle(before.slice(start, endBefore), after.slice(start, endAfter)),
    ...same(before.slice(endBefore)),
  ];
}

function diffMiddle(a: string[], b: string[]): DiffOp[] {
  const removed = (lines: string[]): DiffOp[] => lines.map((line) => ({ kind: '-', line }));
  const added = (lines: string[]): DiffOp[] => lines.map((line) => ({ kind: '+', line }));
  if (a.length === 0 || b.length === 0 || a.length * b.length > MAX_TABLE_CELLS) return [...removed(a), ...added(b)];

  // lcs[i * width + j] = length of the longest common subsequence of a[i..] and b[j..].
  const width = b.length + 1;
  const lcs = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i * width + j] =
        a[i] === b[j]
          ? (lcs[(i + 1) * width + j + 1] ?? 0) + 1
          : Math.max(lcs[(i + 1) * width + j] ?? 0, lcs[i * width + j + 1] ?? 0);
    }
  }
  const ops: DiffOp[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      ops.push({ kind: ' ', line: a[i++] as string });
      j++;
    } else if ((lcs[(i + 1) * width + j] ?? 0) >= (lcs[i * width + j + 1] ?? 0)) {
      ops.push({ kind: '-', line: a[i++] as string });
    } else {
      ops.push({ kind: '+', line: b[j++] as string });
    }
  }
  return [...ops, ...removed(a.slice(i)), ...added(b.slice(j))];
}

export function countChanges(ops: DiffOp[]): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const op of ops) {
    if (op.kind === '+') added++;
    else if (op.kind === '-') removed++;
  }
  return { added, removed };
}

/** `git diff`-style text for one file; '' when nothing changed. A missing side is `/dev/null`. */
export function unifiedDiff(path: string, before: string | undefined, after: string | undefined): string {
  const ops = diffLines(splitLines(before ?? ''), splitLines(after ?? ''));
  const hunks = renderHunks(ops);
  if (hunks.length === 0) return '';
  const from = before === undefined ? '/dev/null' : `a/${path}`;
  const to = after === undefined ? '/dev/null' : `b/${path}`;
  return [`--- ${from}`, `+++ ${to}`, ...hunks].join('\n');
}

function renderHunks(ops: DiffOp[]): string[] {
  const changed = ops.flatMap((op, index) => (op.kind === ' ' ? [] : [index]));
  const first = changed[0];
  if (first === undefined) return [];

  // Group changes whose context windows touch into one hunk: [from, to) ranges over ops.
  const ranges: Array<[number, number]> = [];
  let from = Math.max(0, first - CONTEXT_LINES);
  let to = Math.min(ops.length, first + 1 + CONTEXT_LINES);
  for (const index of changed.slice(1)) {
    if (index - CONTEXT_LINES <= to) {
      to = Math.min(ops.length, index + 1 + CONTEXT_LINES);
      continue;
    }
    ranges.push([from, to]);
    from = index - CONTEXT_LINES;
    to = Math.min(ops.length, index + 1 + CONTEXT_LINES);
  }
  ranges.push([from, to]);

  // Line numbers where each op sits in the old and the new file.
  const oldLineAt: number[] = [];
  const newLineAt: number[] = [];
  let oldLine = 1;
  let newLine = 1;
  for (const op of ops) {
    oldLineAt.push(oldLine);
    newLineAt.push(newLine);
    if (op.kind !== '+') oldLine++;
    if (op.kind !== '-') newLine++;
  }

  const out: string[] = [];
  for (const [start, end] of ranges) {
    const slice = ops.slice(start, end);
    const oldCount = slice.filter((op) => op.kind !== '+').length;
    const newCount = slice.filter((op) => op.kind !== '-').length;
    // git numbers an empty side by the line before it.
    const oldStart = oldCount === 0 ? (oldLineAt[start] ?? 1) - 1 : (oldLineAt[start] ?? 1);
    const newStart = newCount === 0 ? (newLineAt[start] ?? 1) - 1 : (newLineAt[start] ?? 1);
    out.push(`@@ -${oldStart},${oldCount} +${newStart},${newCount} @@`);
    for (const op of slice) out.push(`${op.kind}${op.line}`);
  }
  return out;
}
