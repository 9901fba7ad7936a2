import { createServer } from 'node:net';
import { expect } from 'vitest';
import { unique } from './factories.js';
import { client, request, type Client } from './http.js';

export interface SignedUp {
  id: string;
  email: string;
  password: string;
  token: string;
  client: Client;
}

/**
 * A new USER through self-service sign-up (no admin involved, so the admin's own request bucket is
 * not spent); `ip` is sent as X-Forwarded-For (used only when the app trusts 127.0.0.1).
 */
export async function signUp(base: string, ip?: string): Promise<SignedUp> {
  const headers = ip ? { 'x-forwarded-for': ip } : undefined;
  const email = `${unique()}@example.com`;
  const password = `pw-${unique()}-long`;
  const reg = await request(base, '/api/v1/auth/register', {
    method: 'POST',
    body: { name: 'Limited', email, password },
    headers,
  });
  expect(reg.status, reg.text).toBe(201);
  const tok = await request(base, '/api/v1/auth/token', {
    method: 'POST',
    body: { email, password },
    headers,
  });
  expect(tok.status, tok.text).toBe(200);
  const token = tok.body.access_token as string;
  return { id: reg.body.data.id, email, password, token, client: client(base, { bearer: token }) };
}

export function rateHeaders(res: { headers: Headers }) {
  const n = (name: string) => {
    const v = res.headers.get(name);
    return v === null ? null : Number(v);
  };
  return {
    limit: n('ratelimit-limit'),
    remaining: n('ratelimit-remaining'),
    reset: n('ratelimit-reset'),
    retryAfter: n('retry-after'),
  };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
