/**
 * The login state, in upstream nanobot's file and format so an upstream login keeps working:
 * `<stateDir or ~/.nanobot/weixin>/account.json` = { token, get_updates_buf, context_tokens, typing_tickets,
 * base_url, replaced_config_token_sha256? }. Written atomically, 0600 (it holds the bot token).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, unwatchFile, watchFile } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { expandHome, writeFileAtomic } from '../../util/fs.js';
import { lockFile } from '../../util/lock.js';

/** How often a waiting channel looks for a login saved elsewhere. */
const WATCH_INTERVAL_MS = 500;

const stringMap = z
  .record(z.string(), z.unknown())
  .catch({})
  .transform((map) =>
    Object.fromEntries(
      Object.entries(map).filter(
        (entry): entry is [string, string] => typeof entry[1] === 'string' && entry[0].trim() !== '' && entry[1] !== '',
      ),
    ),
  );

const accountSchema = z.looseObject({
  token: z.string().catch(''),
  get_updates_buf: z.string().catch(''),
  context_tokens: stringMap.default({}),
  typing_tickets: z.record(z.string(), z.unknown()).catch({}).default({}),
  base_url: z.string().catch(''),
  replaced_config_token_sha256: z.string().optional().catch(undefined),
});

export type Account = z.infer<typeof accountSchema>;

export function stateDirOf(settings: { stateDir: string }, dataDir: string): string {
  return settings.stateDir.trim() ? expandHome(settings.stateDir.trim(), homedir()) : join(dataDir, 'weixin');
}

export function accountPath(stateDir: string): string {
  return join(stateDir, 'account.json');
}

export function emptyAccount(): Account {
  return { token: '', get_updates_buf: '', context_tokens: {}, typing_tickets: {}, base_url: '' };
}

/** The saved account, or undefined when there is none (a broken file counts as none: log in again). */
export function readAccount(stateDir: string): Account | undefined {
  let text: string;
  try {
    text = readFileSync(accountPath(stateDir), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = accountSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Calls `changed` with the account file's contents each time it changes (stat polling: works before it exists). */
export function watchAccount(stateDir: string, changed: (account: Account | undefined) => void): () => void {
  const file = accountPath(stateDir);
  const listener = (): void => changed(readAccount(stateDir));
  watchFile(file, { interval: WATCH_INTERVAL_MS, persistent: false }, listener);
  return () => unwatchFile(file, listener);
}

/**
 * Read-modify-write of the account file under a cross-process lock, so the gateway saving its cursor never puts
 * back an old login over one `nanobot channels login weixin` just saved. `change` returns undefined to write nothing.
 */
export async function updateAccount(
  stateDir: string,
  change: (current: Account | undefined) => Account | undefined,
): Promise<void> {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const file = accountPath(stateDir);
  const release = await (await lockFile())(file, {
    realpath: false,
    stale: 10_000,
    retries: { retries: 50, minTimeout: 5, maxTimeout: 200, factor: 1.5 },
  });
  try {
    const next = change(readAccount(stateDir));
    if (next) await writeFileAtomic(file, `${JSON.stringify(next)}\n`, 0o600);
  } finally {
    await release().catch(() => {});
  }
}

export function fingerprint(token: string): string {
  return token ? createHash('sha256').update(token).digest('hex') : '';
}

/**
 * Which bot token to use, as upstream decides: a token in config.json wins, unless a QR login recorded that it
 * replaced exactly that token; without one in config.json, the saved login's.
 */
export function effectiveToken(configToken: string, account: Account | undefined): string {
  const configured = configToken.trim();
  if (!configured) return account?.token ?? '';
  if (account?.token && account.replaced_config_token_sha256 === fingerprint(configured)) return account.token;
  return configured;
}
