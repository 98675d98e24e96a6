/** The account file under its lock: a save of the gateway's cursor never puts an old login back over a new one. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';
import { describe, expect, it } from 'vitest';
import { accountPath, emptyAccount, updateAccount } from '../../../src/channels/weixin/state.js';

describe('weixin account file', () => {
  it('makes a save wait while a login holds the lock, then see the new login and write nothing over it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nb-wx-state-'));
    const file = accountPath(dir);
    writeFileSync(file, JSON.stringify({ ...emptyAccount(), token: 'old-token' }));
    // Another process (`nanobot channels login weixin`) in the middle of saving its login.
    const release = await lockfile.lock(file, { realpath: false });
    const seen: string[] = [];
    const save = updateAccount(dir, (current) => {
      seen.push(current?.token ?? '');
      return current?.token === 'old-token' ? { ...current, get_updates_buf: 'cursor-of-the-old-login' } : undefined;
    });
    writeFileSync(file, JSON.stringify({ ...emptyAccount(), token: 'new-token' }));
    await release();
    await save;
    expect(seen).toEqual(['new-token']);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ token: 'new-token', get_updates_buf: '' });
  });
});
