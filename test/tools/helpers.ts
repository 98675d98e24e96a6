import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import type { ContentPart } from '../../src/providers/types.js';
import type { ToolContext, ToolResult } from '../../src/tools/types.js';

const created: string[] = [];

afterEach(() => {
  for (const dir of created.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh real directory under the OS temp dir (resolved, so macOS /private/tmp compares equal). */
export function makeTempDir(prefix = 'nanobot-tools-'): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  created.push(dir);
  return dir;
}

export function makeContext(overrides: Partial<ToolContext> = {}): ToolContext {
  return { signal: new AbortController().signal, ...overrides };
}

export function textOf(result: ToolResult): string {
  if (typeof result.content === 'string') return result.content;
  return result.content
    .filter((part): part is Extract<ContentPart, { type: 'text' }> => part.type === 'text')
    .map((part) => part.text)
    .join('\n');
}
