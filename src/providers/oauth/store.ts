/**
 * OAuth tokens on disk: `~/.nanobot/auth/<provider>.json`, the folder 0700 and each file 0600 (they are as good as a
 * password), written atomically. Only the login command and the token refresh write here.
 */
import { chmod, mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../util/fs.js';

export interface StoredToken {
  /** The access token (GitHub's OAuth token for Copilot, the ChatGPT access token for Codex). */
  access: string;
  refresh?: string;
  /** Epoch ms; absent for tokens that do not expire. */
  expiresAt?: number;
  /** The account it belongs to (GitHub login, ChatGPT account id). */
  accountId?: string;
}

export class TokenStore {
  constructor(readonly dir: string) {}

  pathOf(file: string): string {
    return join(this.dir, file);
  }

  async read(file: string): Promise<StoredToken | undefined> {
    let text: string;
    try {
      text = await readFile(this.pathOf(file), 'utf8');
    } catch {
      return undefined;
    }
    try {
      const parsed = JSON.parse(text) as Partial<StoredToken>;
      if (typeof parsed.access !== 'string' || !parsed.access) return undefined;
      return {
        access: parsed.access,
        ...(typeof parsed.refresh === 'string' && parsed.refresh ? { refresh: parsed.refresh } : {}),
        ...(typeof parsed.expiresAt === 'number' ? { expiresAt: parsed.expiresAt } : {}),
        ...(typeof parsed.accountId === 'string' ? { accountId: parsed.accountId } : {}),
      };
    } catch {
      return undefined; // A damaged file reads as "not signed in"; the next login replaces it.
    }
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
