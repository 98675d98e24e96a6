/**
 * nanobot's JSONL session format: line 1 is metadata, then one message per line.
 * Files live outside the workspace (`<data>/sessions/<workspace-id>/<base64url(key)>.jsonl`) so the agent's
 * file tools cannot rewrite its own transcript. Writes are atomic; damaged lines are skipped with a warning.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ChatMessage } from '../providers/types.js';
import { writeFileAtomic } from '../util/fs.js';
import { type Logger, silentLogger } from '../util/log.js';
import { newSession, type Session, type SessionStore, type SessionSummary } from './types.js';

interface MetadataLine {
  _type: 'metadata';
  key: string;
  created_at: string;
  updated_at: string;
  metadata: Record<string, unknown>;
  last_consolidated: number;
}

export const encodeSessionKey = (key: string): string => Buffer.from(key, 'utf8').toString('base64url');
export const decodeSessionKey = (name: string): string => Buffer.from(name, 'base64url').toString('utf8');

export class JsonlSessionStore implements SessionStore {
  constructor(
    readonly dir: string,
    private readonly log: Logger = silentLogger,
  ) {}

  pathFor(key: string): string {
    return join(this.dir, `${encodeSessionKey(key)}.jsonl`);
  }

  async load(key: string): Promise<Session> {
    const path = this.pathFor(key);
    if (!existsSync(path)) return newSession(key);
    return parseSessionFile(await readFile(path, 'utf8'), key, path, this.log);
  }

  async save(session: Session): Promise<void> {
    session.updatedAt = new Date().toISOString();
    await writeFileAtomic(this.pathFor(session.key), serializeSession(session), 0o600);
  }

  async list(): Promise<SessionSummary[]> {
    if (!existsSync(this.dir)) return [];
    const out: SessionSummary[] = [];
    for (const name of await readdir(this.dir)) {
      if (!name.endsWith('.jsonl')) continue;
      const key = decodeSessionKey(name.slice(0, -'.jsonl'.length));
      const session = await this.load(key);
      out.push({ key, updatedAt: session.updatedAt, messageCount: session.messages.length });
    }
    return out.sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathFor(key), { force: true });
  }
}

export function serializeSession(session: Session): string {
  const meta: MetadataLine = {
    _type: 'metadata',
    key: session.key,
    created_at: session.createdAt,
    updated_at: session.updatedAt,
    metadata: session.metadata,
    last_consolidated: session.lastConsolidated,
  };
  const lines = [
    JSON.stringify(meta),
    ...(session.preserved ?? []).map((line) => JSON.stringify(line)),
    ...session.messages.map((m) => JSON.stringify(m)),
  ];
  return `${lines.join('\n')}\n`;
}

export function parseSessionFile(text: string, key: string, path: string, log: Logger): Session {
  const session = newSession(key);
  const lines = text.split('\n');
  const lastIndex = lines.findLastIndex((l) => l.trim() !== '');
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      const where = index === lastIndex ? 'a torn last line (an interrupted write)' : `a corrupt line ${index + 1}`;
      log.warn(`session ${key}: dropped ${where} in ${path}`);
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const record = value as Record<string, unknown>;
    if (record._type === 'metadata') {
      const meta = record as Partial<MetadataLine>;
      session.createdAt = meta.created_at ?? session.createdAt;
      session.updatedAt = meta.updated_at ?? session.updatedAt;
      session.metadata = meta.metadata ?? {};
      session.lastConsolidated = meta.last_consolidated ?? 0;
    } else if (record._type === undefined && typeof record.role === 'string') {
      session.messages.push(record as unknown as ChatMessage);
    } else if (typeof record._type === 'string') {
      session.preserved = [...(session.preserved ?? []), record];
    }
  });
  session.lastConsolidated = Math.min(session.lastConsolidated, session.messages.length);
  return session;
}
