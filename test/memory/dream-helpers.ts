/** A temp workspace with nanobot's memory layout and a few history entries. */
import fs from 'node:fs';
import path from 'node:path';
import type { HistoryEntry } from '../../src/memory/dream-history.js';
import { makeTempDir } from '../tools/helpers.js';

export const ORIGINAL_MEMORY = '# Memory\n\n## Projects\n- nanobot-ts: TypeScript port\n';

export function makeWorkspace(entries: HistoryEntry[] = defaultEntries()): string {
  const workspace = makeTempDir('nanobot-dream-');
  fs.mkdirSync(path.join(workspace, 'memory'), { recursive: true });
  fs.writeFileSync(path.join(workspace, 'SOUL.md'), '# Soul\nI am nanobot.\n');
  fs.writeFileSync(path.join(workspace, 'USER.md'), '# User\n');
  fs.writeFileSync(path.join(workspace, 'memory', 'MEMORY.md'), ORIGINAL_MEMORY);
  writeHistory(workspace, entries);
  return workspace;
}

export function writeHistory(workspace: string, entries: HistoryEntry[]): void {
  const text = entries.map((entry) => JSON.stringify(entry)).join('\n');
  fs.writeFileSync(path.join(workspace, 'memory', 'history.jsonl'), entries.length > 0 ? `${text}\n` : '');
}

export function defaultEntries(): HistoryEntry[] {
  return [
    { cursor: 1, timestamp: '2026-05-01 09:00', content: 'User said they moved to Berlin.', session_key: 'cli:direct' },
    { cursor: 2, timestamp: '2026-05-01 09:05', content: 'User started a project called garden-bot.' },
  ];
}

export const read = (workspace: string, file: string): string => fs.readFileSync(path.join(workspace, file), 'utf8');
