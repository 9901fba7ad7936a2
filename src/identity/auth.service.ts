import { timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { ApiKeysRepository } from './api-keys.repository.js';
import { DatabaseService } from '../database/database.service.js';
import { nowIso } from '../common/ids.js';
import { CredentialUsers } from './credential-users.js';
import { isStorableText } from '../common/validation.js';
import type { Caller } from './caller.js';
import { dummyPasswordHash, verifyPassword } from './passwords.js';
import { isRole, lowerRole, type Role } from './role.js';
import { sha256 } from './token.service.js';

/** Only write `last_used_at` once a minute per key: a write per request would cost the hot path. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * Turns verified credentials into a caller from the database. Used by the passport strategies,
 * which the credential door (credentials.service.ts) runs for every transport.
 */
@Injectable()
export class AuthService {
  private readonly logger = new Logger(AuthService.name);
  private readonly lastUsedWritten = new Map<string, number>();
  /** The hash each password caller was checked against (for `recheckBasic`). */
  private readonly passwordHashes = new WeakMap<Caller, string>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: DatabaseService,
    private readonly apiKeys: ApiKeysRepository,
    private readonly users: CredentialUsers,
  ) {}

  /** The live user's id and role, or undefined when deleted/unknown. */
  async liveUserRole(userId: string): Promise<Role | undefined> {
    const role = await this.users.liveRole(userId);
    return isRole(role) ? role : undefined;
  }

  async verifyBasic(email: string, password: string): Promise<Caller | undefined> {
    if (!isStorableText(email) || !isStorableText(password)) {
      return undefined; // no stored email holds NUL or a lone surrogate (PostgreSQL would refuse it)
    }
    const row = await this.users.findLoginByEmail(email.trim().toLowerCase());
    if (!row?.password_hash) {
      await verifyPassword(await dummyPasswordHash(this.config.passwordHashProfile), password);
      return undefined;
    }
    if (!(await verifyPassword(row.password_hash, password)) || !isRole(row.role)) {
      return undefined;
    }
    const caller: Caller = { userId: row.id, role: row.role, method: 'basic' };
    this.passwordHashes.set(caller, row.password_hash);
    return caller;
  }

  /** A first-party access token's caller; the role comes from the database, not the token. */
  /**
   * The caller of a verified token of `userId` issued at `issuedAtS` and expiring at `expS` (JWT
   * `iat`, `exp`, seconds): undefined when the user is gone, or when the token predates the user's
   * last password change (`tokens_valid_after`; `iat` has one-second resolution, so a token issued
   * within the same second as the change still passes).
   */
  async callerFromClaims(
    userId: string,
    issuedAtS: number | undefined,
    expS: number,
  ): Promise<Caller | undefined> {
    const row = await this.users.findTokenState(userId);
    if (!row || !isRole(row.role)) {
      return undefined;
    }
    if (row.tokens_valid_after !== null) {
      const validAfterS = Math.floor(Date.parse(row.tokens_valid_after) / 1000);
      if (typeof issuedAtS !== 'number' || issuedAtS < validAfterS) {
        return undefined;
      }
    }
    return { userId, role: row.role, method: 'jwt', expiresAt: expS * 1000 };
  }

  /**
   * A password caller again, with its user's current role: undefined once the user is deleted or
   * the password has changed since it was checked (one row read, no argon2).
   */
  async recheckBasic(caller: Caller): Promise<Caller | undefined> {
    const checked = this.passwordHashes.get(caller);
    const row = await this.users.findRoleAndPassword(caller.userId);
    if (!row || checked === undefined || row.password_hash !== checked || !isRole(row.role)) {
      return undefined;
    }
    const current: Caller = { ...caller, role: row.role };
    this.passwordHashes.set(current, checked);
    return current;
  }

  async verifyApiKey(key: string): Promise<Caller | undefined> {
    if (key.length < 10 || key.length > 200) {
      return undefined;
    }
    const hash = sha256(key);
    const row = await this.apiKeys.findCredential(hash);
    if (!row || !timingSafeEqual(Buffer.from(row.key_hash), Buffer.from(hash))) {
      return undefined;
    }
    const now = nowIso();
    if (row.revoked_at !== null || (row.expires_at !== null && row.expires_at <= now)) {
      return undefined;
    }
    if (!isRole(row.role) || !isRole(row.user_role)) {
      return undefined;
    }
    this.touchKey(row.id, now);
    return {
      userId: row.user_id,
      role: lowerRole(row.role, row.user_role),
      method: 'api_key',
      keyId: row.id,
      ...(row.expires_at !== null ? { expiresAt: Date.parse(row.expires_at) } : {}),
    };
  }

  private touchKey(keyId: string, now: string): void {
    const last = this.lastUsedWritten.get(keyId) ?? 0;
    if (Date.now() - last < LAST_USED_RESOLUTION_MS) {
      return;
    }
    this.lastUsedWritten.set(keyId, Date.now());
    this.db
      .transaction(({ manager }) => this.apiKeys.touchLastUsed(manager, keyId, now))
      .catch((err: unknown) => this.logger.warn({ err }, 'could not record api key use'));
  }
}
