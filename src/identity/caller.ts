import { Role, roleAtLeast } from './role.js';

export const AUTH_METHODS = ['basic', 'jwt', 'api_key', 'oauth'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

/**
 * Who is calling: built once per request (per WebSocket operation) by the credential door
 * (credentials.service.ts) from whichever credentials came in.
 */
export interface Caller {
  userId: string;
  /** Effective role: an API key's role is capped by its owner's (docs/contract.md section 4). */
  role: Role;
  method: AuthMethod;
  keyId?: string;
  clientId?: string;
  scopes?: string[];
  /** When the credential lapses by itself (ms since the epoch): a JWT's `exp`, an API key's expiry. */
  expiresAt?: number;
  /**
   * The HTTP request this caller is making (REST or GraphQL over HTTP), which the audit log records
   * beside a change (docs/admin.md "Audit log"); absent on WebSocket operations.
   */
  request?: CallerRequest;
}

/** The request id of the response (`X-Request-Id`) and the client address (`req.ip`). */
interface CallerRequest {
  requestId: string;
  ip?: string;
}

/** `undefined` is the anonymous caller (only public routes and GraphQL introspection). */
export type MaybeCaller = Caller | undefined;

export function isAdmin(caller: MaybeCaller): boolean {
  return caller !== undefined && caller.role === Role.ADMIN;
}

export function hasRole(caller: MaybeCaller, role: Role): caller is Caller {
  return caller !== undefined && roleAtLeast(caller.role, role);
}

/**
 * The rate-limit identity of a caller: its user (password, JWT, and every API key of that user: keys
 * share their owner's budget, so more keys are not more requests), or for an OAuth access token the
 * pair (client, user): one user of a partner app never spends another user's requests, GraphQL cost
 * budget or WebSocket slots, and an app never spends its user's first-party budget.
 */
export function identityOf(caller: Caller): string {
  if (caller.clientId) {
    return `client:${caller.clientId}:user:${caller.userId}`;
  }
  return `user:${caller.userId}`;
}
