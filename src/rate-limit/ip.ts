import { isIP } from 'node:net';

/** The eight 16-bit groups of a valid IPv6 address (as `isIP` accepts it, lower case). */
function hextets(address: string): number[] {
  let head = address;
  const lastColon = head.lastIndexOf(':');
  const tail = head.slice(lastColon + 1);
  if (tail.includes('.')) {
    // an embedded IPv4 address (`::ffff:192.0.2.1`) as two groups
    const [a, b, c, d] = tail.split('.').map(Number);
    head = `${head.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left, right] = head.split('::');
  const l = left ? left.split(':') : [];
  const r = right ? right.split(':') : [];
  const fill = right === undefined ? 0 : 8 - l.length - r.length;
  return [...l, ...new Array<string>(fill).fill('0'), ...r].map((g) => parseInt(g, 16));
}

/** RFC 5952 text: lower case, the longest run of two or more zero groups as `::`. */
function formatIpv6(groups: number[]): string {
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === 0) {
      j++;
    }
    if (j - i > bestLength) {
      [bestStart, bestLength] = [i, j - i];
    }
    i = j;
  }
  const text = groups.map((g) => g.toString(16));
  if (bestLength < 2) {
    return text.join(':');
  }
  return `${text.slice(0, bestStart).join(':')}::${text.slice(bestStart + bestLength).join(':')}`;
}

/**
 * The client address a rate-limit bucket is keyed by: IPv4 as is; IPv6 by its /64 (one host usually
 * owns the whole subnet: `2001:db8:1:2::/64`), but the loopback as `::1` and IPv4-mapped addresses
 * (`::ffff:192.0.2.1`) as their IPv4 address. A zone (`%eth0`) is dropped; anything else is kept.
 */
export function normalizeIp(ip: string): string {
  const zone = ip.indexOf('%');
  const bare = zone === -1 ? ip : ip.slice(0, zone);
  const version = isIP(bare);
  if (version === 4) {
    return bare;
  }
  if (version !== 6) {
    return ip;
  }
  const groups = hextets(bare.toLowerCase());
  if (groups[7] === 1 && groups.slice(0, 7).every((g) => g === 0)) {
    return '::1';
  }
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
  }
  return `${formatIpv6([...groups.slice(0, 4), 0, 0, 0, 0])}/64`;
}
