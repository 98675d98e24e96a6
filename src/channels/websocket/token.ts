/**
 * The WebUI token: `channels.websocket.token` when set, else a random one kept in `<data dir>/webui-token` (0600),
 * created on first use and printed by `nanobot webui`. Compared in constant time by `security/secrets.ts`.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../util/fs.js';

const TOKEN_FILE = 'webui-token';
const STORED_TOKEN = /^[A-Za-z0-9_-]{32,256}$/;

export function tokenFilePath(dataDir: string): string {
  return join(dataDir, TOKEN_FILE);
}

/** The stored token, or a new one written there (private to the user). */
export async function loadOrCreateToken(dataDir: string): Promise<string> {
  const path = tokenFilePath(dataDir);
  const stored = await readFile(path, 'utf8').then(
    (text) => text.trim(),
    () => '',
  );
  if (STORED_TOKEN.test(stored)) {
    await chmod(path, 0o600).catch(() => undefined);
    return stored;
  }
  const token = randomBytes(32).toString('base64url');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await writeFileAtomic(path, `${token}\n`, 0o600);
  return token;
}

/** The token clients must present: the configured one, else the stored one. */
export async function resolveToken(configured: string, dataDir: string): Promise<string> {
  return configured.trim() || loadOrCreateToken(dataDir);
}
