import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from 'node:http';
import { loadConfig } from '../config/config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { RateLimitService } from './rate-limit.service.js';
import { MemoryRateLimitStore } from './rate-limit.store.js';
import { SocketLimitsService } from './socket-limits.service.js';

const service = (env: Record<string, string> = {}) => {
  const config = loadConfig({
    WS_MAX_CONNECTIONS_PER_IDENTITY: '2',
    WS_MAX_OPERATIONS_PER_CONNECTION: '2',
    ...env,
  });
  return new SocketLimitsService(
    config,
    new RateLimitService(config, new MemoryRateLimitStore(), new MetricsService()),
  );
};

const upgrade = (peer: string, forwarded?: string) =>
  ({
    socket: { remoteAddress: peer },
    headers: forwarded ? { 'x-forwarded-for': forwarded } : {},
  }) as unknown as IncomingMessage;

describe('SocketLimitsService', () => {
  it('caps open connections per identity and frees a slot on release (once)', () => {
    const limits = service();
    const [a, b, c] = [{}, {}, {}];
    expect(limits.acquireConnection(a, 'user:1')).toBe(true);
    expect(limits.acquireConnection(b, 'user:1')).toBe(true);
    expect(limits.acquireConnection(c, 'user:1')).toBe(false);
    expect(limits.acquireConnection(c, 'key:1')).toBe(true); // another identity
    expect(limits.openConnections('user:1')).toBe(2);
    limits.releaseConnection(a);
    limits.releaseConnection(a);
    limits.releaseConnection({}); // never registered
    expect(limits.openConnections('user:1')).toBe(1);
    expect(limits.acquireConnection({}, 'user:1')).toBe(true);
    expect(limits.acquireConnection({}, 'user:1')).toBe(false);
  });

  it('counts a socket once however often it is acquired', () => {
    const limits = service();
    const a = {};
    expect(limits.acquireConnection(a, 'user:1')).toBe(true);
    expect(limits.acquireConnection(a, 'user:1')).toBe(true);
    expect(limits.openConnections('user:1')).toBe(1);
  });

  it('allows operations up to the cap, counting the one being subscribed', () => {
    const limits = service();
    expect(limits.operationAllowed({ subscriptions: { '1': null } })).toBe(true);
    expect(limits.operationAllowed({ subscriptions: { '1': null, '2': null } })).toBe(true);
    expect(limits.operationAllowed({ subscriptions: { '1': null, '2': null, '3': null } })).toBe(
      false,
    );
    expect(limits.tooManyOperationsError().extensions.code).toBe('RATE_LIMITED');
  });

  it('caps nothing with RATE_LIMIT_ENABLED=false', () => {
    const limits = service({ RATE_LIMIT_ENABLED: 'false' });
    for (let i = 0; i < 5; i++) {
      expect(limits.acquireConnection({}, 'user:1')).toBe(true);
    }
    expect(limits.operationAllowed({ subscriptions: { '1': null, '2': null, '3': null } })).toBe(
      true,
    );
  });

  it('takes the client address from X-Forwarded-For only behind trusted proxies', () => {
    const direct = service();
    expect(direct.clientAddress(upgrade('10.0.0.9', '1.2.3.4'))).toBe('10.0.0.9');
    const proxied = service({ TRUSTED_PROXIES: '127.0.0.1,10.1.0.0/16' });
    expect(proxied.clientAddress(upgrade('127.0.0.1', '1.2.3.4'))).toBe('1.2.3.4');
    expect(proxied.clientAddress(upgrade('::ffff:127.0.0.1', '5.6.7.8, 10.1.2.3'))).toBe('5.6.7.8');
    expect(proxied.clientAddress(upgrade('127.0.0.1', '6.6.6.6, 7.7.7.7'))).toBe('7.7.7.7'); // the client can prepend anything
    expect(proxied.clientAddress(upgrade('10.0.0.9', '1.2.3.4'))).toBe('10.0.0.9');
    expect(proxied.clientAddress(upgrade('127.0.0.1'))).toBe('127.0.0.1');
  });

  it('charges each operation a request and its cost, refusing with RATE_LIMITED when either runs out', async () => {
    const limits = service({ RATE_LIMIT: '3', GRAPHQL_COST_BUDGET: '100' });
    const socket = {};
    expect(limits.acquireConnection(socket, 'user:1')).toBe(true);
    expect(await limits.chargeOperation(socket, 60)).toBeUndefined();
    const overBudget = await limits.chargeOperation(socket, 60);
    expect(overBudget?.extensions.code).toBe('RATE_LIMITED');
    expect(overBudget?.message).toMatch(/40 of 100 are left/);
    expect(await limits.chargeOperation(socket, 40)).toBeUndefined();
    const overRate = await limits.chargeOperation(socket, 1);
    expect(overRate?.message).toMatch(/Too many requests/);
  });
});
