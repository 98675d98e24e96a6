/** A full disk writes part of a big line, then fails: the store must leave whole lines only and say so. */
import { readFileSync, writeSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WriteSyscall } from '../../src/security/workspace-file-ops.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { FileWriteError } from '../../src/util/errors.js';

/** Writes at most `room` bytes in all (short counts first, like a filling disk), then fails with `code`. */
function disk(room: number, code = 'ENOSPC'): { write: WriteSyscall; free(): void } {
  let left = room;
  let full = true;
  return {
    write: (fd, data, offset, length) => {
      if (!full) return writeSync(fd, data, offset, length);
      if (left === 0) throw Object.assign(new Error(`${code}: no space left on device, write`), { code });
      const n = Math.min(length, left, 19200);
      left -= n;
      return writeSync(fd, data, offset, n);
    },
    free: () => {
      full = false;
    },
  };
}

const wholeLines = (text: string) =>
  text.endsWith('\n') &&
  text
    .split('\n')
    .slice(0, -1)
    .every((l) => JSON.parse(l));

describe.each([
  { name: 'short counts, then ENOSPC', room: 40_000, code: 'ENOSPC' },
  { name: 'ENOSPC at once', room: 0, code: 'ENOSPC' },
  { name: 'EDQUOT after a short count', room: 1, code: 'EDQUOT' },
  { name: 'EIO after short counts', room: 19_200 * 2, code: 'EIO' },
])('session append on a failing disk ($name)', ({ room, code }) => {
  it('truncates back, throws a FileWriteError naming the file, and the next append after freeing space works', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nb-short-'));
    const fault = disk(room, code);
    const sessions = new JsonlSessionStore(dir, undefined, { writeSync: fault.write });
    const session = await sessions.load('k');
    session.messages.push({ role: 'user', content: 'first' }, { role: 'assistant', content: 'hello' });
    await sessions.save(session); // a new file: written whole by the atomic path
    const path = sessions.pathFor('k');
    const before = readFileSync(path, 'utf8');

    session.messages.push({ role: 'user', content: 'x'.repeat(200_000) });
    session.metadata.pending_user_turn = true;
    const error = await sessions.save(session).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FileWriteError);
    expect((error as FileWriteError).code).toBe(code);
    expect((error as FileWriteError).message).toContain(path);
    expect(readFileSync(path, 'utf8')).toBe(before);

    // A fresh process sees only what was there; after space is freed the same object saves its message.
    expect((await new JsonlSessionStore(dir).load('k')).messages).toHaveLength(2);
    fault.free();
    await sessions.save(session);
    const after = readFileSync(path, 'utf8');
    expect(wholeLines(after)).toBe(true);
    const loaded = await new JsonlSessionStore(dir).load('k');
    expect(loaded.messages.map((m) => String(m.content).length)).toEqual([5, 5, 200_000]);
  });
});
