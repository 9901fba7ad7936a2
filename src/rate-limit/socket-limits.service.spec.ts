import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.js';
import { SocketLimitsService } from './socket-limits.service.js';

const service = (env: Record<string, string> = {}) =>
  new SocketLimitsService(
    loadConfig({ WS_MAX_CONNECTIONS_PER_IDENTITY: '2', WS_MAX_OPERATIONS_PER_CONNECTION: '2', ...env }),
  );

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
    expect(limits.operationAllowed({ subscriptions: { '1': null, '2': null, '3': null } })).toBe(false);
    expect(limits.tooManyOperationsError().extensions.code).toBe('RATE_LIMITED');
  });

  it('caps nothing with RATE_LIMIT_ENABLED=false', () => {
    const limits = service({ RATE_LIMIT_ENABLED: 'false' });
    for (let i = 0; i < 5; i++) {
      expect(limits.acquireConnection({}, 'user:1')).toBe(true);
    }
    expect(limits.operationAllowed({ subscriptions: { '1': null, '2': null, '3': null } })).toBe(true);
  });
});
