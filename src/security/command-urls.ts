/**
 * The exec tool's network guard: internal hosts a shell command names, however it spells them. The address
 * judgement is network.ts's (blockedRangeOf / the policy's whitelist, through findBlockedUrlsInText); this file only
 * finds the hosts: URLs and host:port text anywhere, plus the arguments of network clients (`nc 0 8080`, `curl 127.1`).
 */

import { collectAssignments, expandAssigned } from './exec-expand.js';
import {
  type BlockedUrlInText,
  findBlockedUrlsInText,
  NETWORK_HARD_BOUNDARY,
  type NetworkPolicy,
  NUMERIC_HOST,
  numberIsHost,
} from './network.js';
import { parseShellCommand } from './shell-parse.js';

/** Programs whose positional arguments are hosts or URLs. */
const NETWORK_CLIENTS = new Set([
  ...['curl', 'wget', 'http', 'https', 'xh', 'httpie', 'aria2c', 'lynx', 'w3m', 'links', 'elinks', 'fetch', 'ftp'],
  ...['nc', 'ncat', 'netcat', 'telnet', 'socat', 'ssh', 'sftp', 'scp', 'rsync', 'redis-cli', 'mysql', 'psql'],
]);

/** The host part of a network client's argument: `user@host:port/path`, `TCP:host:port`, `host:path` (scp). */
function hostOfArgument(arg: string): string | undefined {
  if (arg.includes('://')) return undefined; // SCHEME_URL already saw it.
  const value = arg
    .replace(/^--?[\w-]+=/, '')
    .replace(/^(?:tcp|udp|tcp4|tcp6|udp4|udp6|ssl|openssl|tcp-connect|tcp-listen)[46]?:/i, '');
  const withoutUser = value.slice(value.lastIndexOf('@') + 1);
  const bracketed = /^\[[^\]]+\]/.exec(withoutUser);
  const host = bracketed ? bracketed[0] : (withoutUser.split(/[:/]/)[0] ?? '');
  if (host === '') return undefined;
  if (NUMERIC_HOST.test(host)) return numberIsHost(host.replace(/\.$/, '')) ? host : undefined;
  return bracketed || /^[\w.-]+$/.test(host) ? host : undefined;
}

/**
 * Every host an argument may name: its leading host, and any colon-separated field after it, because clients take
 * addresses there too (`curl --resolve name:80:127.0.0.1`, `curl --connect-to ::127.1:80`, `ssh -L 80:0:22`).
 * A field that is an ordinary name or a port is harmless: the classifier blocks only internal hosts.
 */
function hostsOfArgument(arg: string): string[] {
  const hosts = [hostOfArgument(arg)];
  const value = arg.replace(/^--?[\w-]+=/, '');
  if (!value.includes('://')) {
    for (const field of value.split(/:(?![^[]*\])/).slice(1))
      hosts.push(field === '' ? undefined : hostOfArgument(field));
  }
  return hosts.filter((host): host is string => host !== undefined);
}

/**
 * Hosts named as arguments of network clients (`nc 0 8080`, `curl 127.1`, `ssh root@0x7f.1`), nested shells too,
 * after the exec guard's own expansion of the variables the command line assigns (`u=127.1; curl $u:80`). Words the
 * expansion changed are also collected in `expanded`, for the URL text check.
 */
function networkClientHosts(command: string, expanded: string[], depth = 0): { raw: string; host: string }[] {
  const hosts: { raw: string; host: string }[] = [];
  const segments = parseShellCommand(command);
  const assignments = collectAssignments(segments, new Map());
  for (const segment of segments) {
    const words = expandAssigned(segment.words, assignments).map((word) => word.value);
    const original = new Set(segment.words.map((word) => word.value));
    expanded.push(...words.filter((word) => !original.has(word)));
    const at = words.findIndex((word) => NETWORK_CLIENTS.has(word.slice(word.lastIndexOf('/') + 1).toLowerCase()));
    for (const [i, word] of words.entries()) {
      if (/\s/.test(word.trim()) && depth < 4) hosts.push(...networkClientHosts(word, expanded, depth + 1));
      if (at === -1 || i <= at || (word.startsWith('-') && !word.includes('='))) continue;
      for (const host of hostsOfArgument(word)) hosts.push({ raw: word, host });
    }
  }
  return hosts;
}

/** Internal hosts a shell command names: URLs, scheme-less host:port, /dev/tcp paths, network-client arguments. */
export function findBlockedHostsInCommand(
  command: string,
  policy?: Pick<NetworkPolicy, 'checkAddress'>,
): BlockedUrlInText[] {
  const expanded: string[] = [];
  const clientHosts = networkClientHosts(command, expanded);
  const found = findBlockedUrlsInText([command, ...expanded].join('\n'), policy);
  for (const { raw, host } of clientHosts) {
    // One classifier: each host goes through the same text check as a URL would.
    const [hit] = findBlockedUrlsInText(`http://${host}/`, policy);
    if (hit && !found.some((entry) => entry.url === raw)) found.push({ url: raw, reason: hit.reason });
  }
  return found;
}

/** Exec-guard helper: one line saying which internal URL a command names, or ok. */
export function checkCommandUrls(
  command: string,
  policy?: Pick<NetworkPolicy, 'checkAddress'>,
): { ok: true } | { ok: false; reason: string } {
  const [first] = findBlockedHostsInCommand(command, policy);
  if (!first) return { ok: true };
  return {
    ok: false,
    reason: `Command blocked by network guard: it targets ${first.url} (${first.reason}). ${NETWORK_HARD_BOUNDARY}`,
  };
}
