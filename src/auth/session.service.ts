import { Injectable, Logger } from '@nestjs/common';
import { Unauthorized } from '../common/errors.js';
import { DatabaseService } from '../database/database.service.js';
import { RefreshTokensRepository } from '../database/refresh-tokens.repository.js';
import { AuthService } from './auth.service.js';
import { TokenPair } from './dto/auth.responses.js';
import type { Role } from './role.js';
import { sha256, TokenService } from './token.service.js';

export { TokenPair };

/**
 * First-party sessions: a short-lived JWT access token plus an opaque, single-use refresh token
 * (stored as a SHA-256 hash). Each sign-in starts a token family; a refresh rotates within it.
 * Presenting a used refresh token again (a replay, or a second concurrent refresh of one token)
 * revokes its whole family (reuse detection, RFC 9700 section 4.14.2); see docs/data-integrity.md.
 */
@Injectable()
export class SessionService {
  private readonly security = new Logger('Security');

  constructor(
    private readonly db: DatabaseService,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly tokens: TokenService,
    private readonly auth: AuthService,
  ) {}

  /** `client` (address, request id) is for the security log line of a reuse. */
  async refresh(
    refreshToken: string,
    client: { address?: string; requestId?: string } = {},
  ): Promise<TokenPair> {
    const hash = sha256(refreshToken);
    const { token, hash: nextHash } = this.tokens.newOpaqueToken('rt_');
    const issued = await this.db.transaction(async ({ manager }) => {
      const now = new Date();
      const claimed = await this.refreshTokens.claim(manager, hash, now.toISOString());
      if (!claimed) {
        const used = await this.refreshTokens.usedFamily(manager, hash);
        if (used) {
          await this.refreshTokens.revokeFamily(manager, used.family);
          this.security.warn(
            {
              event: 'refresh_token_reuse',
              user_id: used.userId,
              token_family: used.family,
              address: client.address,
              request_id: client.requestId,
            },
            'a used refresh token was presented again: its family is revoked',
          );
        }
        return undefined;
      }
      await this.refreshTokens.insert(manager, {
        userId: claimed.user_id,
        familyId: claimed.family_id,
        hash: nextHash,
        expiresAt: this.expiry(now),
        now: now.toISOString(),
      });
      return claimed.user_id;
    });
    const role = issued ? await this.auth.liveUserRole(issued) : undefined;
    if (!issued || !role) {
      throw Unauthorized('Invalid or expired refresh token');
    }
    return this.pair(issued, role, token);
  }

  /** A new token pair for a user whose credentials the caller has verified. */
  async issue(userId: string, role: Role): Promise<TokenPair> {
    const { token, hash } = this.tokens.newOpaqueToken('rt_');
    const now = new Date();
    await this.db.transaction(({ manager }) =>
      this.refreshTokens.insert(manager, {
        userId,
        hash,
        expiresAt: this.expiry(now),
        now: now.toISOString(),
      }),
    );
    return this.pair(userId, role, token);
  }

  private expiry(now: Date): string {
    return new Date(now.getTime() + this.tokens.refreshTtlS * 1000).toISOString();
  }

  private pair(userId: string, role: Role, refreshToken: string): TokenPair {
    return {
      access_token: this.tokens.signAccessToken(userId, role),
      token_type: 'Bearer',
      expires_in: this.tokens.accessTtlS,
      refresh_token: refreshToken,
    };
  }
}
