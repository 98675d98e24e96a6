/**
 * Secrets at the edges: comparing a presented key or token without leaking its length or prefix through timing,
 * and masking secrets in error text that is shown (`/health`, `nanobot channels status`, logs).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Logger } from '../util/log.js';

/**
 * Constant-time equality of a presented secret with the expected one. Both sides are hashed first, so the time
 * does not depend on where they differ or on their lengths. A missing or empty value never matches.
 */
export function secretMatches(expected: string, given: string | undefined | null): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  const same = timingSafeEqual(digest(expected), digest(given ?? ''));
  return same && expected !== '' && !!given;
}

const MASK = '<redacted>';
/** Configured values shorter than this are not masked on their own (masking "k" would garble every message). */
const MIN_SECRET_LENGTH = 6;

/** Patterns of secrets in error text, whatever their value: the first group is kept, the rest is masked. */
const SECRET_PATTERNS: readonly RegExp[] = [
  // Telegram: https://api.telegram.org/bot<id>:<token>/getMe (and the bare token anywhere).
  /(\bbot)\d{3,}:[A-Za-z0-9_-]{10,}/g,
  /()\b\d{6,}:[A-Za-z0-9_-]{30,}\b/g,
  // Credentials in a URL's query: ?token=…, &access_token=…, ?key=…
  /([?&#;](?:[a-z0-9_-]*token|[a-z0-9_-]*key|key|secret|client_secret|password|passwd|sig|signature|auth|code)=)[^&#\s"'<>]+/gi,
  // user:password@ in a URL.
  /(\b[a-z][a-z0-9+.-]*:\/\/[^:/?#\s@]*:)[^@/?#\s]+(?=@)/gi,
  // Authorization header values.
  // (a word after "bearer" in a sentence has no digit; a token has)
  /(\bBearer\s+)(?=[A-Za-z._~+/=-]*\d)[A-Za-z0-9._~+/=-]{6,}/gi,
  /(\b(?:Basic|Token)\s+)[A-Za-z0-9._~+/=-]{16,}/g,
  /(\bBot\s+)[A-Za-z0-9._~+/=-]{20,}/g,
  // Well-known key prefixes: OpenAI/Anthropic sk-, Slack xox?-/xapp-, GitHub, GitLab, AWS access key ids.
  /(\b(?:sk-ant-|sk-|xox[abposr]-|xapp-|ghp_|gho_|ghs_|github_pat_|glpat-))[A-Za-z0-9_-]{8,}/g,
  /()\bAKIA[0-9A-Z]{16}\b/g,
];

/**
 * `text` with secrets masked: the shapes above (bot tokens in URLs, `token=`/`key=` query values, Bearer values,
 * URL passwords, well-known key prefixes) and every configured secret value (raw and URL-encoded).
 */
export function redactSecrets(text: string, secrets: Iterable<string> = []): string {
  let out = text;
  const values = [...new Set([...secrets].filter((value) => value.length >= MIN_SECRET_LENGTH))];
  // Longest first, so a secret that contains another is masked whole.
  values.sort((a, b) => b.length - a.length);
  for (const value of values) {
    for (const form of new Set([value, encodeURIComponent(value)])) out = out.split(form).join(MASK);
  }
  for (const pattern of SECRET_PATTERNS) out = out.replace(pattern, (_match, keep: string) => `${keep}${MASK}`);
  return out;
}

/** Setting names whose string values are secrets: `token`, `botToken`, `apiKey`, `appSecret`, `imapPassword`… */
const SECRET_KEY = /(token|secret|passw(?:or)?d|key|credential|authorization|cookie)s?$/i;

/**
 * Every secret-looking string value in a config object (by setting name, at any depth, including MCP `env` and
 * `headers`), for `redactSecrets`.
 */
export function collectSecrets(config: unknown): string[] {
  const found = new Set<string>();
  const walk = (value: unknown, key: string, depth: number) => {
    if (depth > 12 || value === null) return;
    if (typeof value === 'string') {
      if (SECRET_KEY.test(key) && value.trim().length >= MIN_SECRET_LENGTH) found.add(value.trim());
      return;
    }
    if (Array.isArray(value)) {
      for (const item of value) walk(item, key, depth + 1);
      return;
    }
    if (typeof value === 'object') {
      for (const [child, inner] of Object.entries(value)) walk(inner, child, depth + 1);
    }
  };
  walk(config, '', 0);
  return [...found];
}

const collected = new WeakMap<object, string[]>();

/** `collectSecrets`, computed once per config object (a reload brings a new one). */
export function secretsOf(config: object): string[] {
  let found = collected.get(config);
  if (!found) {
    found = collectSecrets(config);
    collected.set(config, found);
  }
  return found;
}

/** A logger that masks secrets in every line (an SDK's error may quote a request URL with a token in it). */
export function redactingLogger(log: Logger, secrets: () => Iterable<string>): Logger {
  const clean = (message: string) => redactSecrets(message, secrets());
  return {
    debug: (m) => log.debug(clean(m)),
    info: (m) => log.info(clean(m)),
    warn: (m) => log.warn(clean(m)),
    error: (m) => log.error(clean(m)),
  };
}

/** A command-line flag whose value is a secret: `--api-key`, `--token`, `-password`, `--client-secret`… */
const SECRET_FLAG = /^--?[a-z0-9_-]*(token|secret|passw(?:or)?d|key|credential|auth(?:orization)?)$/i;

/**
 * A command's arguments fit to show (the WebUI's MCP server summary): the value after a secret-named flag, the value
 * of `--flag=value` and `NAME=value` with a secret name, and every shape `redactSecrets` knows are masked.
 */
export function redactArgs(args: readonly string[], secrets: Iterable<string> = []): string[] {
  const known = [...secrets];
  return args.map((arg, index) => {
    const previous = index > 0 ? args[index - 1] : undefined;
    if (previous !== undefined && SECRET_FLAG.test(previous) && !arg.startsWith('-')) return MASK;
    const assignment = /^(-{0,2}[A-Za-z0-9_.-]+)=(.*)$/s.exec(arg);
    if (assignment?.[1] && SECRET_KEY.test(assignment[1].replace(/^-+/, ''))) return `${assignment[1]}=${MASK}`;
    return redactSecrets(arg, known);
  });
}
