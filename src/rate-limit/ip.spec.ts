import { describe, expect, it } from 'vitest';
import { normalizeIp } from './ip.js';

describe('normalizeIp (the address a rate-limit bucket is keyed by)', () => {
  it.each([
    ['192.0.2.1', '192.0.2.1'],
    ['::1', '::1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::FFFF:c000:0201', '192.0.2.1'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:DB8:1:2::9', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8::/64'],
    ['fe80::1%eth0', 'fe80::/64'],
    ['2001:0:0:1:2::', '2001:0:0:1::/64'],
    ['1:0:2:0::', '1:0:2::/64'],
    ['::', '::/64'],
    ['unknown', 'unknown'],
    ['not:an:address', 'not:an:address'],
  ])('%s -> %s', (ip, expected) => {
    expect(normalizeIp(ip)).toBe(expected);
  });

  it('agrees with the IPv6 text of two addresses in one /64', () => {
    expect(normalizeIp('2001:db8:aa:bb:1::')).toBe(normalizeIp('2001:db8:aa:bb:ffff:1:2:3'));
  });
});
