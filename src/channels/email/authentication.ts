/**
 * Is the From of a mail vouched for by the receiving server? Anyone can write an `Authentication-Results` header
 * into the mail they send, above or below the server's own, and a `pass` there may be for another domain than
 * From. So: only the receiving server's header counts (the topmost one, or with `trustedAuthservIds` the topmost
 * one that server signs with its authserv-id), it must be readable as RFC 8601 (comments, quoted values, folded
 * lines, one result per method clause), and it must say `dmarc=pass` for the From domain, or `dkim=pass` with a
 * `header.d` aligned with From, or `spf=pass` with an aligned `smtp.mailfrom`.
 */
import { domainToASCII } from 'node:url';

export interface MethodResult {
  /** `spf`, `dkim`, `dmarc`… (lower case, version dropped). */
  method: string;
  /** `pass`, `fail`, `none`… (lower case). */
  result: string;
  /** `ptype.property` (lower case) → value, e.g. `header.d` → `example.com`. */
  props: Map<string, string>;
}

export interface AuthenticationResults {
  /** The authserv-id (lower case, no trailing dot); undefined for a header that has none (Microsoft 365 writes so). */
  authservId: string | undefined;
  /** undefined when the header could not be read: nothing in it counts. */
  results: MethodResult[] | undefined;
}

interface Token {
  kind: 'word' | 'quoted' | ';' | '=';
  text: string;
  /** Whitespace or a comment came before it. */
  spaced: boolean;
}

/** Words, quoted strings, `;` and `=`; comments (nested, with escapes) count as whitespace. undefined if unterminated. */
function lex(value: string): Token[] | undefined {
  const tokens: Token[] = [];
  let spaced = true;
  let i = 0;
  while (i < value.length) {
    const c = value.charAt(i);
    if (/\s/.test(c)) {
      spaced = true;
      i += 1;
    } else if (c === '(') {
      let depth = 0;
      for (; i < value.length; i += 1) {
        const d = value.charAt(i);
        if (d === '\\') i += 1;
        else if (d === '(') depth += 1;
        else if (d === ')' && --depth === 0) break;
      }
      if (depth !== 0) return undefined;
      i += 1;
      spaced = true;
    } else if (c === '"') {
      let text = '';
      let closed = false;
      for (i += 1; i < value.length; i += 1) {
        const d = value.charAt(i);
        if (d === '\\') text += value.charAt(++i);
        else if (d === '"') {
          closed = true;
          break;
        } else text += d;
      }
      if (!closed) return undefined;
      i += 1;
      push(tokens, { kind: 'quoted', text, spaced });
      spaced = false;
    } else if (c === ';' || c === '=') {
      tokens.push({ kind: c, text: c, spaced });
      i += 1;
      spaced = false;
    } else {
      // A value may hold `=` (base64 `header.b=abc=`, as servers write it); a key or result may not.
      const stop = tokens.at(-1)?.kind === '=' ? /[\s();"]/ : /[\s();="]/;
      const start = i;
      while (i < value.length && !stop.test(value.charAt(i))) i += 1;
      push(tokens, { kind: 'word', text: value.slice(start, i), spaced });
      spaced = false;
    }
  }
  return tokens;
}

/** A value written against the one before it (`"quoted local part"@example.com`) is one value. */
function push(tokens: Token[], token: Token): void {
  const last = tokens.at(-1);
  if (!token.spaced && last && (last.kind === 'word' || last.kind === 'quoted')) {
    tokens[tokens.length - 1] = { kind: 'quoted', text: last.text + token.text, spaced: last.spaced };
  } else tokens.push(token);
}

const METHOD = /^([a-z][a-z0-9_-]*)(\/[0-9]+)?$/;
const RESULT = /^[a-z][a-z0-9_-]*$/;
const KEY = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_.-]*)?$/;

/** One `method=result key=value…` clause; undefined when it is not one. */
function parseClause(tokens: Token[]): MethodResult | undefined {
  const pairs: [string, string][] = [];
  let i = 0;
  while (i < tokens.length) {
    const words: string[] = [];
    while (tokens[i]?.kind === 'word') words.push(tokens[i++]?.text ?? '');
    const joined = words.every((word, n) => n === 0 || /[./]$/.test(words[n - 1] ?? '') || /^[./]/.test(word));
    if (words.length === 0 || !joined || tokens[i]?.kind !== '=') return undefined;
    const value = tokens[i + 1];
    if (!value || (value.kind !== 'word' && value.kind !== 'quoted')) return undefined;
    pairs.push([words.join('').toLowerCase(), value.text]);
    i += 2;
  }
  const [first, ...rest] = pairs;
  const method = first && METHOD.exec(first[0]);
  if (!first || !method?.[1] || !RESULT.test(first[1].toLowerCase())) return undefined;
  const props = new Map<string, string>();
  for (const [key, value] of rest) {
    // A key written twice is ambiguous (which smtp.mailfrom did the server check?): the clause does not count.
    if (!KEY.test(key) || props.has(key)) return undefined;
    props.set(key, value);
  }
  return { method: method[1], result: first[1].toLowerCase(), props };
}

/** One Authentication-Results value (unfolded). */
export function parseAuthenticationResults(value: string): AuthenticationResults {
  const tokens = lex(value);
  if (!tokens) return { authservId: undefined, results: undefined };
  const segments: Token[][] = [[]];
  for (const token of tokens) {
    if (token.kind === ';') segments.push([]);
    else segments.at(-1)?.push(token);
  }
  const [head = [], ...clauses] = segments;
  let authservId: string | undefined;
  if (head.some((token) => token.kind === '=')) {
    clauses.unshift(head); // no authserv-id: the first clause starts the header
  } else {
    const [id, version, ...extra] = head;
    if (!id || extra.length > 0 || (version && !/^[0-9]+$/.test(version.text)))
      return { authservId: undefined, results: undefined };
    authservId = normalizeAuthservId(id.text);
  }
  const results: MethodResult[] = [];
  for (const clause of clauses) {
    if (clause.length === 0) continue; // a trailing `;`
    if (clause.length === 1 && clause[0]?.kind === 'word' && clause[0].text.toLowerCase() === 'none') continue;
    const parsed = parseClause(clause);
    if (!parsed) return { authservId, results: undefined };
    results.push(parsed);
  }
  return { authservId, results };
}

export function normalizeAuthservId(id: string): string {
  return id.trim().toLowerCase().replace(/\.$/, '');
}

/** `Alice@Example.COM.` / `<a@b>` / `example.com` → ASCII lower-case domain; '' when it is none. */
export function domainOf(value: string): string {
  const bare = value.trim().replace(/^<|>$/g, '');
  const domain = bare.slice(bare.lastIndexOf('@') + 1).replace(/\.$/, '');
  if (!domain || /[\s<>@,;]/.test(domain)) return '';
  const ascii = domainToASCII(domain);
  return /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/.test(ascii) ? ascii : '';
}

/** Second-level labels that ccTLD registries sell under (`co.uk`, `com.au`): such a pair is no organisation. */
const REGISTRY_LABELS = new Set(['ac', 'co', 'com', 'edu', 'gov', 'ne', 'net', 'or', 'org', 'go', 'gv', 'mil']);

function couldBeOrganisation(domain: string): boolean {
  const labels = domain.split('.');
  if (labels.length < 2) return false;
  return !(labels.length === 2 && labels[1]?.length === 2 && REGISTRY_LABELS.has(labels[0] ?? ''));
}

/**
 * Relaxed alignment without a public-suffix list: the same domain, or one a subdomain of the other where the
 * parent could be an organisation's domain (`mail.example.com` ~ `example.com`; never `evil-example.com`,
 * `example.com.evil.com`, `co.uk`). Sibling subdomains are not aligned here (a DMARC pass covers them).
 */
export function aligned(authenticated: string, from: string): boolean {
  const a = domainOf(authenticated);
  const f = domainOf(from);
  if (!a || !f) return false;
  if (a === f) return true;
  if (a.endsWith(`.${f}`)) return couldBeOrganisation(f);
  if (f.endsWith(`.${a}`)) return couldBeOrganisation(a);
  return false;
}

export interface VerdictOptions {
  /** authserv-ids of the receiving server (lower case); empty: the topmost header is the server's. */
  trustedAuthservIds: readonly string[];
  /** An aligned `spf=pass` counts. */
  spf: boolean;
  /** An aligned `dkim=pass` counts. */
  dkim: boolean;
}

export type Verdict = { ok: true; by: string } | { ok: false; why: string };

/**
 * Whether the receiving server vouches for `fromAddress`. `values` are the Authentication-Results headers of the
 * mail, topmost first (a server adds its header above what the mail already had).
 */
export function authenticationVerdict(
  values: readonly string[],
  fromAddress: string,
  options: VerdictOptions,
): Verdict {
  const fromDomain = domainOf(fromAddress);
  if (!fromDomain) return { ok: false, why: `its From address ${fromAddress} has no domain to check` };
  const trusted = new Set(options.trustedAuthservIds.map(normalizeAuthservId));
  const parsed = values.map(parseAuthenticationResults);
  const header = trusted.size
    ? parsed.find((candidate) => candidate.authservId !== undefined && trusted.has(candidate.authservId))
    : parsed[0];
  if (!header) {
    const which = trusted.size ? ` from ${[...trusted].join(' or ')} (channels.email.trustedAuthservIds)` : '';
    return { ok: false, why: `it has no Authentication-Results header${which}` };
  }
  if (!header.results) return { ok: false, why: 'the receiving server’s Authentication-Results could not be read' };
  for (const { method, result, props } of header.results) {
    if (result !== 'pass') continue;
    if (method === 'dmarc' && domainOf(props.get('header.from') ?? '') === fromDomain) return { ok: true, by: 'DMARC' };
    if (method === 'dkim' && options.dkim && aligned(dkimDomain(props), fromDomain)) return { ok: true, by: 'DKIM' };
    if (method === 'spf' && options.spf && aligned(props.get('smtp.mailfrom') ?? '', fromDomain))
      return { ok: true, by: 'SPF' };
  }
  const checks = ['DMARC', ...(options.dkim ? ['DKIM'] : []), ...(options.spf ? ['SPF'] : [])].join(', ');
  return { ok: false, why: `the receiving server did not confirm ${fromDomain} (no aligned pass of ${checks})` };
}

/** The signing domain: `header.d`, else the domain of `header.i` (the identity, always within d). */
function dkimDomain(props: Map<string, string>): string {
  const d = props.get('header.d');
  if (d !== undefined) return d.includes('@') ? '' : d;
  const identity = props.get('header.i') ?? '';
  return identity.includes('@') ? identity : '';
}
