import { Injectable } from '@nestjs/common';
import { Unauthorized } from '../common/errors.js';
import { newId, nowIso } from '../common/ids.js';
import { DatabaseService } from '../database/database.service.js';
import { AuthService } from './auth.service.js';
import type { Role } from './role.js';
import { sha256, TokenService } from './token.service.js';

export interface TokenPair {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
}

/**
 * First-party sessions: a short-lived JWT access token plus an opaque, single-use refresh token
 * (stored as a SHA-256 hash). Presenting a used refresh token again revokes every refresh token of
 * that user (reuse detection, RFC 9700 4.14.2).
 */
@Injectable()
export class SessionService {
  constructor(
    private readonly db: DatabaseService,
    private readonly tokens: TokenService,
    private readonly auth: AuthService,
  ) {}

  async passwordGrant(email: string, password: string): Promise<TokenPair> {
    const caller = await this.auth.verifyBasic(email, password);
    if (!caller) {
      throw Unauthorized('Invalid email or password');
    }
    return this.issue(caller.userId, caller.role);
  }

  async refresh(refreshToken: string): Promise<TokenPair> {
    const hash = sha256(refreshToken);
    const p = (n: number) => this.db.p(n);
    const userId = await this.db.transaction(async ({ manager }) => {
      const rows = await manager.query<
        { id: string; user_id: string; expires_at: string; used_at: string | null }[]
      >(`SELECT id, user_id, expires_at, used_at FROM refresh_tokens WHERE token_hash = ${p(1)}`, [
        hash,
      ]);
      const row = rows[0];
      if (!row) {
        return undefined;
      }
      if (row.used_at !== null) {
        await manager.query(`DELETE FROM refresh_tokens WHERE user_id = ${p(1)}`, [row.user_id]);
        return null;
      }
      if (row.expires_at <= nowIso()) {
        return undefined;
      }
      await manager.query(`UPDATE refresh_tokens SET used_at = ${p(1)} WHERE id = ${p(2)}`, [
        nowIso(),
        row.id,
      ]);
      return row.user_id;
    });
    const role = userId ? await this.auth.liveUserRole(userId) : undefined;
    if (!userId || !role) {
      throw Unauthorized('Invalid or expired refresh token');
    }
    return this.issue(userId, role);
  }

  private async issue(userId: string, role: Role): Promise<TokenPair> {
    const { token, hash } = this.tokens.newOpaqueToken('rt_');
    const now = new Date();
    const expires = new Date(now.getTime() + this.tokens.refreshTtlS * 1000).toISOString();
    const p = (n: number) => this.db.p(n);
    await this.db.transaction(({ manager }) =>
      manager.query(
        `INSERT INTO refresh_tokens (id, user_id, token_hash, expires_at, used_at, created_at)
         VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, NULL, ${p(5)})`,
        [newId('refreshToken'), userId, hash, expires, now.toISOString()],
      ),
    );
    return {
      access_token: this.tokens.signAccessToken(userId, role),
      token_type: 'Bearer',
      expires_in: this.tokens.accessTtlS,
      refresh_token: token,
    };
  }
}
