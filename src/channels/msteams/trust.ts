/**
 * Where the Teams channel may send the bot's access token. A reply goes to the `serviceUrl` of an activity whose
 * signed token carried that same URL (auth.ts), and only when its host is one of `trustedServiceUrlHosts`
 * (upstream's list by default: Bot Framework's and Teams' connector hosts). An entry may name a port
 * (`127.0.0.1:3979`); without one it allows any. Plain http is accepted only for a host on this machine that the
 * list names exactly, which is what a loopback test fake needs and nothing else does.
 */
import { isLoopbackHost } from '../../security/hosts.js';

/** Upstream nanobot's defaults for `trustedServiceUrlHosts`. */
export const DEFAULT_TRUSTED_SERVICE_URL_HOSTS: readonly string[] = [
  'smba.trafficmanager.net',
  'smba.infra.gcc.teams.microsoft.com',
  'smba.infra.gov.teams.microsoft.us',
  'smba.infra.dod.teams.microsoft.us',
  '*.botframework.com',
];

const WEBCHAT_HOST = 'webchat.botframework.com';
/** A DNS name (labels of letters, digits and hyphens) or an IP literal, `*.` in front for its subdomains, `:port`. */
const HOST_PATTERN = /^(\*\.)?([a-z0-9-]+(\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(:\d{1,5})?$/;

/** What is wrong with one `trustedServiceUrlHosts` entry, or undefined when it is a host name or `*.suffix`. */
export function hostPatternProblem(pattern: string): string | undefined {
  const normalized = normalizeHost(pattern);
  if (!HOST_PATTERN.test(normalized)) return 'is not a host name or *.domain';
  if (normalized.startsWith('*.') && !normalized.slice(2).includes('.'))
    return 'is too wide: name a domain with at least two labels, such as *.botframework.com';
  return undefined;
}

function normalizeHost(host: string): string {
  return host.trim().toLowerCase().replace(/\.$/, '');
}

/** `pattern` split into its host and port (empty: any port). */
function splitPattern(pattern: string): { host: string; port: string } {
  const normalized = normalizeHost(pattern);
  const match = /^(.*?)(?::(\d{1,5}))?$/.exec(normalized);
  const host = match?.[1] ?? normalized;
  return host.startsWith('[') || !host.includes(':')
    ? { host, port: match?.[2] ?? '' }
    : { host: normalized, port: '' };
}

function hostMatches(url: URL, pattern: string, exactOnly: boolean): boolean {
  const host = normalizeHost(url.hostname);
  const { host: wanted, port } = splitPattern(pattern);
  if (port && port !== (url.port || (url.protocol === 'https:' ? '443' : '80'))) return false;
  if (wanted.startsWith('*.')) {
    const suffix = wanted.slice(1);
    return !exactOnly && host.endsWith(suffix) && host.length > suffix.length;
  }
  return host === wanted;
}

/** The URL the bot may send its token to: https to a trusted host, or http to a loopback host listed exactly. */
export function isTrustedServiceUrl(value: string, patterns: readonly string[]): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.username || url.password) return false;
  if (url.protocol === 'https:') return patterns.some((pattern) => hostMatches(url, pattern, false));
  if (url.protocol !== 'http:' || !isLoopbackHost(url.hostname)) return false;
  return patterns.some((pattern) => hostMatches(url, pattern, true));
}

/** Bot Framework's Web Chat (the Azure portal's "Test in Web Chat"), whose conversations do not last. */
export function isWebChatServiceUrl(value: string): boolean {
  try {
    const host = normalizeHost(new URL(value).hostname);
    return host === WEBCHAT_HOST || host.endsWith(`.${WEBCHAT_HOST}`);
  } catch {
    return false;
  }
}

/** `https://host/` of a URL, for log lines that must not carry paths or queries. */
export function originOf(value: string): string {
  try {
    return new URL(value).origin;
  } catch {
    return '(not a URL)';
  }
}
