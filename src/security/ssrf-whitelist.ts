/**
 * Whether a `tools.ssrfWhitelist` entry is so wide that it switches most of the SSRF guard off: wider than a /8 of
 * IPv4 or a /7 of IPv6 (fc00::/7, the private IPv6 block, is the widest sensible entry), or an IPv6 range that holds
 * more than a /8 of IPv4 through one of the forms network.ts gives the IPv4 verdict (mapped, translated, compatible,
 * NAT64, 6to4). The WebUI refuses such entries; a hand-edited config.json may still hold them.
 */
import net from 'node:net';

const MIN_V4_PREFIX = 8;
const MIN_V6_PREFIX = 7;

/** IPv6 ranges that carry an IPv4 address, and the bit at which it starts. */
const EMBEDDINGS: readonly { base: string; prefix: number; v4At: number }[] = [
  { base: '::ffff:0:0', prefix: 96, v4At: 96 },
  { base: '::ffff:0:0:0', prefix: 96, v4At: 96 },
  { base: '::', prefix: 96, v4At: 96 },
  { base: '64:ff9b::', prefix: 96, v4At: 96 },
  { base: '64:ff9b:1::', prefix: 48, v4At: 96 },
  { base: '2002::', prefix: 16, v4At: 16 },
];

function v6Value(address: string): bigint {
  let text = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((value, group) => (value << 16n) | BigInt(Number.parseInt(group || '0', 16)), 0n);
}

const top = (value: bigint, bits: number) => value >> BigInt(128 - bits);

/** Why the entry is too wide, or null; a malformed entry is the SSRF guard's to refuse (null here). */
export function tooBroadWhitelistEntry(entry: string): string | null {
  const [address = '', prefixText] = entry.trim().split('/');
  const family = net.isIP(address);
  if (family === 0 || (prefixText !== undefined && !/^\d+$/.test(prefixText))) return null;
  const prefix = prefixText === undefined ? (family === 4 ? 32 : 128) : Number(prefixText);
  if (family === 4) return prefix < MIN_V4_PREFIX ? `it is wider than a /${MIN_V4_PREFIX} of IPv4` : null;
  if (prefix < MIN_V6_PREFIX) return `it is wider than a /${MIN_V6_PREFIX} of IPv6`;
  const value = v6Value(address);
  for (const embedding of EMBEDDINGS) {
    const base = v6Value(embedding.base);
    const shared = Math.min(prefix, embedding.prefix);
    if (top(value, shared) !== top(base, shared)) continue;
    if (prefix - embedding.v4At < MIN_V4_PREFIX) return `it holds more than a /${MIN_V4_PREFIX} of IPv4 addresses`;
  }
  return null;
}
