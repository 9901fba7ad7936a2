import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './app.js';
import { client, request, type Client } from './http.js';

export function unique(prefix = 'u'): string {
  return `${prefix}${randomBytes(5).toString('hex')}`;
}

export async function tokenFor(base: string, email: string, password: string): Promise<string> {
  const res = await request(base, '/api/v1/auth/token', {
    method: 'POST',
    body: { email, password },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.access_token as string;
}

export async function adminClient(base: string): Promise<Client> {
  return client(base, { bearer: await tokenFor(base, ADMIN_EMAIL, ADMIN_PASSWORD) });
}

export interface CreatedUser {
  id: string;
  email: string;
  password: string;
  token: string;
  client: Client;
  body: Record<string, unknown>;
}

/** Creates a user through the API (as the admin) and signs it in. */
export async function createUser(
  base: string,
  overrides: {
    name?: string;
    role?: 'ADMIN' | 'USER' | 'GUEST';
    email?: string;
    age?: number;
  } = {},
): Promise<CreatedUser> {
  const admin = await adminClient(base);
  const email = overrides.email ?? `${unique()}@example.com`;
  const password = `pw-${unique()}-long`;
  const res = await admin.post('/api/v1/users', {
    name: overrides.name ?? `User ${unique()}`,
    email,
    password,
    ...(overrides.role ? { role: overrides.role } : {}),
    ...(overrides.age !== undefined ? { age: overrides.age } : {}),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const token = await tokenFor(base, email, password);
  return {
    id: res.body.data.id,
    email,
    password,
    token,
    client: client(base, { bearer: token }),
    body: res.body.data,
  };
}

export async function createApiKey(
  c: Client,
  body: Record<string, unknown> = {},
): Promise<{ id: string; key: string }> {
  const res = await c.post('/api/v1/api-keys', { name: `key ${unique()}`, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.data.id, key: res.body.data.key };
}
