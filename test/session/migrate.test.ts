/**
 * Importing v0.3.0's `<workspace>/sessions/` into `<data>/sessions/<workspace-id>/` as nanobot does: copied,
 * fsynced and verified before the original goes; idempotent; a stop at any step loses and duplicates nothing.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { sessionsDirFor } from '../../src/session/location.js';
import {
  MIGRATED_MARKER,
  MigrationInterrupted,
  type MigrationStep,
  restoreSessionsToWorkspace,
} from '../../src/session/migrate.js';
import { createLogger } from '../../src/util/log.js';
import { type UpstreamHome, upstreamHome } from '../helpers/upstream-homes.js';

const BOB = 'Y2xpOmRpcmVjdA.jsonl'; // base64url("cli:direct")
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function home030(): UpstreamHome & { original: Buffer; oldFile: string } {
  const home = upstreamHome('py030home');
  cleanups.push(home.cleanup);
  const oldFile = join(home.workspace, 'sessions', BOB);
  return { ...home, original: readFileSync(oldFile), oldFile };
}

function logger() {
  const warnings: string[] = [];
  return { warnings, log: createLogger('warn', (line) => warnings.push(line)) };
}

/** Every file under `dir` (relative path → bytes), lock directories left out. */
function tree(dir: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix + entry.name;
    if (entry.name.endsWith('.lock')) continue;
    if (entry.isDirectory()) Object.assign(out, tree(join(dir, entry.name), `${rel}/`));
    else out[rel] = readFileSync(join(dir, entry.name), 'utf8');
  }
  return out;
}

class Stop extends Error {}

describe('importing v0.3.0 sessions', () => {
  it('moves the real v0.3.0 session into upstream’s later layout and replays it', async () => {
    const h = home030();
    const dir = await sessionsDirFor(h.dataDir, h.workspace);
    const id = readFileSync(join(h.workspace, '.nanobot', 'workspace-id'), 'utf8').trim();
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(dir).toBe(join(h.dataDir, 'sessions', id));
    expect(readFileSync(join(dir, BOB))).toEqual(h.original);
    expect(readFileSync(join(dir, '.workspace'), 'utf8')).toBe(`${h.workspace}\n`);
    expect(existsSync(h.oldFile)).toBe(false);
    expect(readdirSync(join(h.workspace, 'sessions'))).toEqual([]);
    const session = await new JsonlSessionStore(dir).load('cli:direct');
    expect(session.messages.map((m) => m.content)).toEqual([
      'I am Bob and I like chess.',
      'Hello Bob, noted: you like chess.',
    ]);
  });

  it('is idempotent: a second start changes nothing', async () => {
    const h = home030();
    const dir = await sessionsDirFor(h.dataDir, h.workspace);
    const before = tree(h.dataDir);
    expect(await sessionsDirFor(h.dataDir, h.workspace)).toBe(dir);
    expect(tree(h.dataDir)).toEqual(before);
  });

  it('two processes starting at once agree on one folder and import once', async () => {
    const h = home030();
    const dirs = await Promise.all([1, 2, 3].map(() => sessionsDirFor(h.dataDir, h.workspace)));
    expect(new Set(dirs).size).toBe(1);
    const namespaces = readdirSync(join(h.dataDir, 'sessions')).filter((n) => /^[0-9a-f]{32}$/.test(n));
    expect(namespaces).toHaveLength(1);
    expect(readdirSync(dirs[0] ?? '').filter((n) => n.endsWith('.jsonl'))).toEqual([BOB]);
    expect(readFileSync(join(dirs[0] ?? '', BOB))).toEqual(h.original);
  });

  const steps: MigrationStep[] = ['installed', 'verified'];
  it.each(steps)('stopped right after "%s", the next start loses and duplicates nothing', async (step) => {
    const h = home030();
    await expect(
      sessionsDirFor(h.dataDir, h.workspace, {
        migration: {
          after: (at) => {
            if (at === step) throw new Stop(at);
          },
        },
      }),
    ).rejects.toThrow(MigrationInterrupted);
    // A kill also leaves the temp file of a write in progress behind.
    const id = readFileSync(join(h.workspace, '.nanobot', 'workspace-id'), 'utf8').trim();
    writeFileSync(join(h.dataDir, 'sessions', id, `.${BOB}.0123456789abcdef.tmp`), '{"half');
    expect(existsSync(h.oldFile)).toBe(true); // nothing deleted before it was copied and verified

    const dir = await sessionsDirFor(h.dataDir, h.workspace);
    expect(readFileSync(join(dir, BOB))).toEqual(h.original);
    expect(existsSync(h.oldFile)).toBe(false);
    expect(readdirSync(dir).filter((n) => n.endsWith('.jsonl'))).toEqual([BOB]);
    expect(existsSync(join(dir, '.migration-conflicts'))).toBe(false);
    const session = await new JsonlSessionStore(dir).load('cli:direct');
    expect(session.messages).toHaveLength(2);
  });

  it('a conflict keeps the newer version in place and the other in .migration-conflicts, once', async () => {
    const h = home030();
    const dir = await sessionsDirFor(h.dataDir, h.workspace, {
      migration: {
        after: () => {
          throw new Stop('first run');
        },
      },
    }).catch(() =>
      join(h.dataDir, 'sessions', readFileSync(join(h.workspace, '.nanobot', 'workspace-id'), 'utf8').trim()),
    );
    // The namespace now holds a NEWER, different version (the user went on chatting with the new layout).
    const newer = `${h.original.toString('utf8').replace('"updated_at": "2026-12-01T19:20:52.045380"', '"updated_at": "2026-12-02T08:00:00"')}{"role": "user", "content": "later"}\n`;
    writeFileSync(join(dir, BOB), newer);
    // Stopped right after archiving the losing version, then started again: still one archive.
    await sessionsDirFor(h.dataDir, h.workspace, {
      migration: {
        after: (at) => {
          if (at === 'archived') throw new Stop(at);
        },
      },
    }).catch((e: unknown) => expect(e).toBeInstanceOf(MigrationInterrupted));
    await sessionsDirFor(h.dataDir, h.workspace);
    expect(readFileSync(join(dir, BOB), 'utf8')).toBe(newer);
    const archived = readdirSync(join(dir, '.migration-conflicts'));
    expect(archived).toHaveLength(1);
    expect(archived[0]).toMatch(/^Y2xpOmRpcmVjdA\.workspace\.[0-9a-f]{12}\.jsonl$/);
    expect(readFileSync(join(dir, '.migration-conflicts', archived[0] ?? ''))).toEqual(h.original);
    expect(existsSync(h.oldFile)).toBe(false);
  });

  it('the workspace version wins when it is newer; the namespace one is archived', async () => {
    const h = home030();
    const ws = h.workspace;
    const idFile = join(ws, '.nanobot', 'workspace-id');
    mkdirSync(join(ws, '.nanobot'));
    writeFileSync(idFile, `${'a'.repeat(32)}\n`);
    const dir = join(h.dataDir, 'sessions', 'a'.repeat(32));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, '.workspace'), `${ws}\n`);
    const older = '{"_type": "metadata", "key": "cli:direct", "updated_at": "2026-01-01T00:00:00", "metadata": {}}\n';
    writeFileSync(join(dir, BOB), older);
    await sessionsDirFor(h.dataDir, ws);
    expect(readFileSync(join(dir, BOB))).toEqual(h.original);
    const archived = readdirSync(join(dir, '.migration-conflicts'));
    expect(archived).toEqual([expect.stringMatching(/^Y2xpOmRpcmVjdA\.destination\.[0-9a-f]{12}\.jsonl$/)]);
    expect(readFileSync(join(dir, '.migration-conflicts', archived[0] ?? ''), 'utf8')).toBe(older);
  });

  it('a file that changes while it is imported stays in the workspace and is looked at again', async () => {
    const h = home030();
    const { log, warnings } = logger();
    const later = `${h.original.toString('utf8')}{"_type": "metadata", "key": "cli:direct", "updated_at": "2026-12-03T00:00:00", "metadata": {}}\n`;
    const dir = await sessionsDirFor(h.dataDir, h.workspace, {
      log,
      migration: { after: (at) => at === 'verified' && writeFileSync(h.oldFile, later) },
    });
    expect(existsSync(h.oldFile)).toBe(true);
    expect(warnings.join('\n')).toMatch(/changed while it was imported/);
    expect(existsSync(join(dir, MIGRATED_MARKER))).toBe(false);
    await sessionsDirFor(h.dataDir, h.workspace); // the later version is newer: it wins
    expect(readFileSync(join(dir, BOB), 'utf8')).toBe(later);
    expect(existsSync(h.oldFile)).toBe(false);
  });

  it('keeps invalid files where they are and says so', async () => {
    const h = home030();
    const { log, warnings } = logger();
    const bad = join(h.workspace, 'sessions', 'YmFk.jsonl');
    writeFileSync(bad, 'not json\n{"role":"user"}\n');
    const dir = await sessionsDirFor(h.dataDir, h.workspace, { log });
    expect(readFileSync(bad, 'utf8')).toBe('not json\n{"role":"user"}\n');
    expect(existsSync(join(dir, 'YmFk.jsonl'))).toBe(false);
    expect(warnings.join('\n')).toMatch(/YmFk\.jsonl where it is \(line 1 is not JSON\)/);
    expect(readFileSync(join(dir, BOB))).toEqual(h.original); // the good one still came over
  });

  it('accepts a torn last line (a v0.3.0 crash mid-append), as the store does', async () => {
    const h = home030();
    writeFileSync(h.oldFile, Buffer.concat([h.original, Buffer.from('{"role": "user", "cont')]));
    const dir = await sessionsDirFor(h.dataDir, h.workspace);
    expect((await new JsonlSessionStore(dir).load('cli:direct')).messages).toHaveLength(2);
  });
});

describe('restore-workspace', () => {
  it('copies every session back for a downgrade, never overwriting, and a later start re-imports cleanly', async () => {
    const h = home030();
    const dir = await sessionsDirFor(h.dataDir, h.workspace);
    const first = restoreSessionsToWorkspace(h.workspace, dir);
    expect(first).toMatchObject({ restored: 1, unchanged: 0, conflicts: [] });
    expect(readFileSync(h.oldFile)).toEqual(h.original);
    expect(readFileSync(join(dir, BOB))).toEqual(h.original); // the namespace keeps its copy
    expect(restoreSessionsToWorkspace(h.workspace, dir)).toMatchObject({ restored: 0, unchanged: 1 });
    // v0.3.0 rewrites the whole file, its metadata line with a later updated_at.
    const bumped = h.original.toString('utf8').replace('2026-12-01T19:20:52.045380', '2026-12-05T10:00:00');
    writeFileSync(h.oldFile, `${bumped}{"role": "user", "content": "v0.3.0 again"}\n`);
    const again = restoreSessionsToWorkspace(h.workspace, dir);
    expect(again.conflicts).toEqual([h.oldFile]);
    // Back on this version: what v0.3.0 added is imported (the restore cleared the import record).
    await sessionsDirFor(h.dataDir, h.workspace);
    expect(readFileSync(join(dir, BOB), 'utf8')).toContain('v0.3.0 again');
  });
});
