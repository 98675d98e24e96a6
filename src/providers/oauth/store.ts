/**
 * OAuth tokens on disk: `~/.nanobot/auth/<provider>.json`, the folder 0700 and each file 0600 (they are as good as a
 * password), written atomically. Only the login command and the token refresh write here.
 */
import { chmod, mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { errorMessage } from '../../util/errors.js';
import { writeFileAtomic } from '../../util/fs.js';
import { parseJsonAs } from '../../util/json.js';

export interface StoredToken {
  /** The access token (GitHub's OAuth token for Copilot, the ChatGPT access token for Codex). */
  access: string;
  refresh?: string;
  /** Epoch ms; absent for tokens that do not expire. */
  expiresAt?: number;
  /** The account it belongs to (GitHub login, ChatGPT account id). */
  accountId?: string;
}

const TokenFile = z.looseObject({
  access: z.string().min(1),
  // Optional fields of the wrong type are dropped, as before: the access token alone still signs in.
  refresh: z.string().min(1).optional().catch(undefined),
  expiresAt: z.number().optional().catch(undefined),
  accountId: z.string().optional().catch(undefined),
});

export class TokenStore {
  /** `warn` hears of a damaged token file (its path and what is wrong); it then reads as "not signed in". */
  constructor(
    readonly dir: string,
    private readonly warn: (problem: string) => void = (problem) => process.stderr.write(`[warn] ${problem}\n`),
  ) {}

  pathOf(file: string): string {
    return join(this.dir, file);
  }

  async read(file: string): Promise<StoredToken | undefined> {
    const path = this.pathOf(file);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.warn(`token file ${path} cannot be read: ${errorMessage(error)}; treated as not signed in`);
      }
      return undefined;
    }
    // A damaged file reads as "not signed in"; the next login replaces it.
    const parsed = parseJsonAs(text, TokenFile, `token file ${path}`);
    if (!parsed.ok) {
      this.warn(`${parsed.problem}; treated as not signed in (run \`nanobot provider login\` again)`);
      return undefined;
    }
    const { access, refresh, expiresAt, accountId } = parsed.value;
    return {
      access,
      ...(refresh !== undefined ? { refresh } : {}),
      ...(expiresAt !== undefined ? { expiresAt } : {}),
      ...(accountId !== undefined ? { accountId } : {}),
    };
  }

  async write(file: string, token: StoredToken): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await chmod(this.dir, 0o700);
    await writeFileAtomic(this.pathOf(file), `${JSON.stringify(token, null, 2)}\n`, 0o600);
  }

  /** True when there was a token to remove. */
  async remove(file: string): Promise<boolean> {
    const existed = (await this.read(file)) !== undefined;
    await rm(this.pathOf(file), { force: true });
    return existed;
  }
}
