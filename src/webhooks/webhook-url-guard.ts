import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Addresses a webhook may not reach unless allowed (SSRF): loopback, private (RFC 1918, IPv6 ULA),
 * link-local (with the cloud metadata address 169.254.169.254), CGNAT (RFC 6598), "this network",
 * multicast and reserved ranges, the same ranges mapped into IPv6, and the IPv6 ranges that embed or
 * translate an IPv4 address (docs/webhooks.md "Security").
 */
const FORBIDDEN = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  FORBIDDEN.addSubnet(net, prefix, 'ipv4');
}
// IPv6 ranges that carry or translate to an IPv4 address (IPv4-compatible ::/96 (RFC 4291), 6to4
// 2002::/16 (RFC 3056), NAT64 64:ff9b::/96 (RFC 6052) and its local-use 64:ff9b:1::/48 (RFC 8215))
// are refused whole: the IPv4 address inside may be a private one reached through a relay or a
// translator, and no receiver needs them. ::/96 holds :: and ::1. 100::/64 is the discard range
// (RFC 6666).
for (const [net, prefix] of [
  ['::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['2002::', 16],
  ['100::', 64],
] as const) {
  FORBIDDEN.addSubnet(net, prefix, 'ipv6');
}

/** `WEBHOOK_ALLOWED_HOSTS`: host names matched literally, addresses and CIDRs matched against resolved addresses. */
export class AllowedHosts {
  private readonly names = new Set<string>();
  private readonly addresses = new BlockList();

  constructor(entries: readonly string[]) {
    for (const entry of entries) {
      const [address, prefix] = entry.split('/');
      const family = isIP(address ?? '');
      if (family === 0) {
        this.names.add(entry.replace(/^\[|\]$/g, ''));
      } else if (prefix === undefined) {
        this.addresses.addAddress(address, family === 4 ? 'ipv4' : 'ipv6');
      } else {
        this.addresses.addSubnet(address, Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
      }
    }
  }

  hasName(host: string): boolean {
    return this.names.has(host.toLowerCase());
  }

  hasAddress(address: string): boolean {
    const family = isIP(address);
    return family !== 0 && this.addresses.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }
}

export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) {
    return true;
  }
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) {
      return FORBIDDEN.check(mapped[1], 'ipv4');
    }
    return FORBIDDEN.check(address, 'ipv6');
  }
  return FORBIDDEN.check(address, 'ipv4');
}

/** Where a checked URL may connect: the address it resolved to, pinned for the connection. */
export interface ResolvedTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

export class UrlRefused extends Error {}

/** The host part of a URL without IPv6 brackets. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * Checks a webhook URL and resolves its host: `https` only, no credentials in the URL, and every
 * resolved address public, unless `WEBHOOK_ALLOWED_HOSTS` names the host or covers the address (then
 * `http` is accepted too). Returns the first acceptable address, to connect to that one (a second
 * resolution could answer differently: DNS rebinding).
 */
export async function resolveWebhookUrl(
  raw: string,
  allowed: AllowedHosts,
  resolve: (host: string) => Promise<{ address: string; family: number }[]> = (host) =>
    lookup(host, { all: true, verbatim: true }),
): Promise<ResolvedTarget> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlRefused('must be an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UrlRefused('must use https');
  }
  if (url.username || url.password) {
    throw new UrlRefused('must not contain user information');
  }
  if (url.hash) {
    throw new UrlRefused('must not contain a fragment');
  }
  const host = hostOf(url);
  const nameAllowed = allowed.hasName(host);
  let addresses: { address: string; family: number }[];
  if (isIP(host) !== 0) {
    addresses = [{ address: host, family: isIP(host) }];
  } else {
    try {
      addresses = await resolve(host);
    } catch {
      throw new UrlRefused(`host ${host} does not resolve`);
    }
  }
  if (addresses.length === 0) {
    throw new UrlRefused(`host ${host} does not resolve`);
  }
  const everyAllowed = nameAllowed || addresses.every((a) => allowed.hasAddress(a.address));
  if (url.protocol === 'http:' && !everyAllowed) {
    throw new UrlRefused('must use https');
  }
  if (!everyAllowed) {
    const bad = addresses.find((a) => isForbiddenAddress(a.address));
    if (bad) {
      throw new UrlRefused(
        `host ${host} resolves to a loopback, private, link-local, shared or reserved address (${bad.address})`,
      );
    }
  }
  const first = addresses[0];
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}
