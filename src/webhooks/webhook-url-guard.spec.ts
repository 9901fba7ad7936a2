import { describe, expect, it } from 'vitest';
import { AllowedHosts, isForbiddenAddress, resolveWebhookUrl } from './webhook-url-guard.js';

const none = new AllowedHosts([]);
const dns =
  (answers: Record<string, string[]>) =>
  async (host: string): Promise<{ address: string; family: number }[]> => {
    const list = answers[host];
    if (!list) {
      throw new Error('ENOTFOUND');
    }
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

describe('webhook URL guard (SSRF)', () => {
  it.each([
    '127.0.0.1',
    '10.0.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.254',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '64:ff9b::a00:1',
    '::a00:1',
    '::7f00:1',
    '::808:808',
    '2002:a00:1::1',
    '2002:5db8:d822::1',
    '64:ff9b:1::a00:1',
    '64:ff9b:1:ffff::1',
    '100::1',
    '100::ffff:ffff:ffff:ffff',
  ])('forbids %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each([
    '93.184.216.34',
    '100.128.0.1',
    '172.32.0.1',
    '2606:4700::1111',
    '2003::1',
    '64:ff9b:2::1',
    '100:0:0:1::1',
    '::1:0:0:1',
  ])('allows the public address %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });

  it('refuses a host any of whose addresses is forbidden, and pins the first address', async () => {
    await expect(
      resolveWebhookUrl(
        'https://mixed.example/',
        none,
        dns({ 'mixed.example': ['93.184.216.34', '10.0.0.1'] }),
      ),
    ).rejects.toThrow(/private|reserved|loopback/);
    const ok = await resolveWebhookUrl(
      'https://public.example/x',
      none,
      dns({ 'public.example': ['93.184.216.34'] }),
    );
    expect(ok).toMatchObject({ address: '93.184.216.34', family: 4 });
  });

  it('lets WEBHOOK_ALLOWED_HOSTS exempt names (literally) and CIDRs (by resolved address), http included', async () => {
    const allowed = new AllowedHosts(['hooks.internal', '10.1.0.0/16']);
    const resolve = dns({
      'hooks.internal': ['10.9.9.9'],
      'other.internal': ['10.1.2.3'],
      'far.internal': ['10.2.0.1'],
    });
    await expect(
      resolveWebhookUrl('http://hooks.internal/', allowed, resolve),
    ).resolves.toBeTruthy();
    await expect(
      resolveWebhookUrl('http://other.internal/', allowed, resolve),
    ).resolves.toBeTruthy();
    await expect(resolveWebhookUrl('https://far.internal/', allowed, resolve)).rejects.toThrow();
    await expect(resolveWebhookUrl('http://far.internal/', allowed, resolve)).rejects.toThrow(
      /https/,
    );
    // a name is matched literally: a sub-domain is not the listed host
    await expect(
      resolveWebhookUrl(
        'https://x.hooks.internal/',
        allowed,
        dns({ 'x.hooks.internal': ['10.9.9.9'] }),
      ),
    ).rejects.toThrow();
  });
});
