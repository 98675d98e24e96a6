/**
 * Secrets shown back to a settings client: never whole. A key becomes nanobot's hint (`sk-a••••wxyz`, or `••••` when
 * it is short), and secret-named members of free-form maps (`extraHeaders.Authorization`, `extraBody.api_key`) become
 * a placeholder that, when the client sends it back unchanged, keeps the stored value.
 */

/** What a secret member of a free-form map reads as (nanobot's placeholder, so its WebUI round-trips it). */
export const REDACTED_SECRET = '••••••••';

/** nanobot's `api_key_hint`: the first and last four characters of a long secret, nothing of a short one. */
export function secretHint(secret: string | null | undefined): string | null {
  if (typeof secret !== 'string' || !secret) return null;
  if (secret.length <= 8) return '••••';
  return `${secret.slice(0, 4)}••••${secret.slice(-4)}`;
}

const SECRET_NAMES = new Set([
  'auth',
  'authentication',
  'authorization',
  'bearer',
  'cookie',
  'credential',
  'credentials',
  'hmac',
  'key',
  'passphrase',
  'passwd',
  'proxyauthorization',
  'setcookie',
  'sig',
  'signature',
]);
const SECRET_SUFFIXES = [
  'accesskey',
  'apikey',
  'encryptionkey',
  'password',
  'privatekey',
  'secret',
  'secretkey',
  'signingkey',
  'subscriptionkey',
  'token',
  'tokens',
  'secrets',
];

/** Is a member named `key` (any spelling: `X-Api-Key`, `api_key`, `clientSecret`) a secret? */
export function isSecretName(key: string): boolean {
  const compact = key.toLowerCase().replace(/[^a-z0-9]/g, '');
  return SECRET_NAMES.has(compact) || SECRET_SUFFIXES.some((suffix) => compact.endsWith(suffix));
}

/** A copy of `value` with every non-empty value under a secret-named member replaced by the placeholder. */
export function redactSecretMembers(value: unknown, secret = false): unknown {
  if (secret && value !== null && value !== undefined && value !== '') return REDACTED_SECRET;
  if (Array.isArray(value)) return value.map((item) => redactSecretMembers(item));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, redactSecretMembers(item, isSecretName(key))]),
    );
  }
  return value;
}

/** `submitted` with each placeholder under a secret-named member put back to the stored value it stands for. */
export function restoreSecretMembers(submitted: unknown, current: unknown, secret = false): unknown {
  if (secret && submitted === REDACTED_SECRET) return current;
  if (Array.isArray(submitted)) {
    const before = Array.isArray(current) ? current : [];
    return submitted.map((item, index) => restoreSecretMembers(item, before[index]));
  }
  if (typeof submitted === 'object' && submitted !== null) {
    const before = typeof current === 'object' && current !== null ? (current as Record<string, unknown>) : {};
    return Object.fromEntries(
      Object.entries(submitted).map(([key, item]) => [key, restoreSecretMembers(item, before[key], isSecretName(key))]),
    );
  }
  return submitted;
}

/** The placeholder inside a URL (one that needs no percent-encoding). */
const URL_MASK = '***';

/**
 * A URL as a settings client may see it: a password (`http://user:pass@proxy`) and secret-named query members
 * (`?api_key=…`, `&token=…`) become `***`. Text that is not a URL is shown only as a hint.
 */
export function displayUrl(value: string | null | undefined): string | null {
  if (typeof value !== 'string' || !value) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return value.includes('${') ? value : secretHint(value);
  }
  let changed = false;
  if (url.password) {
    url.password = URL_MASK;
    changed = true;
  }
  for (const key of [...url.searchParams.keys()]) {
    if (isSecretName(key) || /^(key|code|sig)$/i.test(key)) {
      url.searchParams.set(key, URL_MASK);
      changed = true;
    }
  }
  if (!changed) return value;
  // URL adds a "/" path to a bare origin; keep the text as the user wrote it.
  return url.pathname === '/' && !url.search && !value.endsWith('/') ? url.href.slice(0, -1) : url.href;
}

/** The stored URL when the client sent back the form `displayUrl` showed it (unchanged), else what was sent. */
export function restoreUrl(submitted: string, current: string | null | undefined): string {
  return typeof current === 'string' && current && displayUrl(current) === submitted ? current : submitted;
}
