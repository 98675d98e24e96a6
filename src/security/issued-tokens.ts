/**
 * Short-lived tokens the gateway hands out (nanobot's `/webui/bootstrap` and `tokenIssuePath`): a WebSocket token is
 * good for one connection (taken when used), an API token for any `/api/*` request until it expires. Tokens are
 * random (`nbwt_` + 32 bytes), kept in memory only, and bounded in number; the clock is injected so tests need no
 * sleeps.
 */
import { randomBytes } from 'node:crypto';

export type TokenAudience = 'client' | 'webui';

export interface IssuedTokensOptions {
  /** Outstanding tokens of each kind; past it, issuing is refused (429) until some expire. Default 10 000. */
  maxTokens?: number;
  now?: () => number;
}

interface Issued {
  expiresAt: number;
  audience: TokenAudience;
}

export class IssuedTokens {
  private readonly connect = new Map<string, Issued>();
  private readonly api = new Map<string, number>();
  private readonly maxTokens: number;
  private readonly now: () => number;

  constructor(options: IssuedTokensOptions = {}) {
    this.maxTokens = options.maxTokens ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** Room for one more WebSocket token (and an API token, when `withApi`). */
  canIssue(withApi = false): boolean {
    this.purge();
    return this.connect.size < this.maxTokens && (!withApi || this.api.size < this.maxTokens);
  }

  issueConnect(ttlS: number, audience: TokenAudience = 'client'): string {
    const token = mint();
    this.connect.set(token, { expiresAt: this.now() + ttlS * 1000, audience });
    return token;
  }

  issueApi(ttlS: number): string {
    const token = mint();
    this.api.set(token, this.now() + ttlS * 1000);
    return token;
  }

  /** Takes a WebSocket token (it cannot be used again): its audience while it was valid, else undefined. */
  take(token: string | undefined | null): TokenAudience | undefined {
    if (!token) return undefined;
    const issued = this.connect.get(token);
    if (!issued) return undefined;
    this.connect.delete(token);
    return this.now() > issued.expiresAt ? undefined : issued.audience;
  }

  /** An API token that has not expired. */
  checkApi(token: string | undefined | null): boolean {
    if (!token) return false;
    const expiresAt = this.api.get(token);
    if (expiresAt === undefined) return false;
    if (this.now() > expiresAt) {
      this.api.delete(token);
      return false;
    }
    return true;
  }

  private purge(): void {
    const now = this.now();
    for (const [token, issued] of this.connect) if (now > issued.expiresAt) this.connect.delete(token);
    for (const [token, expiresAt] of this.api) if (now > expiresAt) this.api.delete(token);
  }
}

function mint(): string {
  return `nbwt_${randomBytes(32).toString('base64url')}`;
}
