/** What an OAuth provider hands the wire adapter for one request. */
export interface OAuthCredentials {
  /** Sent as the bearer token. */
  apiKey: string;
  /** Overrides the spec's default base URL (e.g. Copilot's per-account endpoint) unless the config sets one. */
  apiBase?: string;
  headers: Record<string, string>;
}

export interface CredentialSource {
  /** Fresh credentials, refreshed first when they are about to expire. Throws OAuthError when not signed in. */
  get(): Promise<OAuthCredentials>;
  /** Forget the cached token (the server rejected it): the next `get` fetches or refreshes one. */
  invalidate(): void;
}
