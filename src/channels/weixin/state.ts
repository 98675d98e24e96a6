/**
 * The login state, in upstream nanobot's file and format so an upstream login keeps working:
 * `<stateDir or ~/.nanobot/weixin>/account.json` = { token, get_updates_buf, context_tokens, typing_tickets,
 * base_url, replaced_config_token_sha256? }. Written atomically, 0600 (it holds the bot token).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { expandHome, writeFileAtomic } from '../../util/fs.js';

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

export async function writeAccount(stateDir: string, account: Account): Promise<void> {
  await writeFileAtomic(accountPath(stateDir), `${JSON.stringify(account)}\n`, 0o600);
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
