import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { Unauthorized } from '../common/errors.js';
import { DatabaseService } from '../database/database.service.js';
import { RefreshTokensRepository } from '../database/refresh-tokens.repository.js';
import { AuthService } from '../identity/auth.service.js';
import { TokenPair } from './dto/auth.responses.js';
import type { Role } from '../identity/role.js';
import { sha256, TokenService } from '../identity/token.service.js';

export { TokenPair };

/**
 * First-party sessions: a short-lived JWT access token plus an opaque, single-use refresh token
 * (stored as a SHA-256 hash). Each sign-in starts a token family; a refresh rotates within it.
 * Presenting a used refresh token again (a replay, or a second concurrent refresh of one token)
 * revokes its whole family (reuse detection, RFC 9700 section 4.14.2); see docs/data-integrity.md.
 * Within REFRESH_REUSE_GRACE_S of its first use, a token presented again gets the same new pair
 * (two tabs refreshing at once keep the session): the pair is kept with the used token, encrypted
 * with a key derived from that token, so only its holder can read it. `logout` ends a family.
 */
@Injectable()
export class SessionService {
  private readonly security = new Logger('Security');

  private readonly graceKey: Buffer;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: DatabaseService,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly tokens: TokenService,
    private readonly auth: AuthService,
  ) {
    const der = tokens.privateKey.export({ type: 'pkcs8', format: 'der' });
    this.graceKey = createHmac('sha256', der).update('atrium refresh grace').digest();
  }

  /** Sign-out: ends the family of this refresh token (used or not); unknown tokens change nothing. */
  async logout(refreshToken: string): Promise<void> {
    const hash = sha256(refreshToken);
    await this.db.transaction(async ({ manager }) => {
      const family = await this.refreshTokens.familyOf(manager, hash);
      if (family) {
        await this.refreshTokens.revokeFamily(manager, family);
      }
    });
  }

  private sealKey(refreshToken: string): Buffer {
    return createHmac('sha256', this.graceKey).update(refreshToken).digest();
  }

  private seal(refreshToken: string, pair: TokenPair): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.sealKey(refreshToken), iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(pair), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  private unseal(refreshToken: string, sealed: string): TokenPair | undefined {
    try {
      const raw = Buffer.from(sealed, 'base64url');
      const decipher = createDecipheriv(
        'aes-256-gcm',
        this.sealKey(refreshToken),
        raw.subarray(0, 12),
      );
      decipher.setAuthTag(raw.subarray(12, 28));
      const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]);
      return JSON.parse(text.toString('utf8')) as TokenPair;
    } catch {
      return undefined;
    }
  }

  /**
   * The pair a token was traded for within its grace window. The first request may still be
   * finishing (it stores the pair right after its rotation commits): wait for it briefly.
   */
  private async gracePair(refreshToken: string, hash: string): Promise<TokenPair | undefined> {
    for (let attempt = 0; attempt < 40; attempt++) {
      const sealed = await this.refreshTokens.gracePair(hash);
      if (sealed) {
        return this.unseal(refreshToken, sealed);
      }
      await sleep(50);
    }
    return undefined;
  }

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
        const graceMs = this.config.refreshReuseGraceS * 1000;
        if (used && now.getTime() - Date.parse(used.usedAt) < graceMs) {
          return 'grace' as const; // a second presentation within the window: the same pair
        }
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
    if (issued === 'grace') {
      const same = await this.gracePair(refreshToken, hash);
      if (!same) {
        throw Unauthorized('Invalid or expired refresh token');
      }
      return same;
    }
    const role = issued ? await this.auth.liveUserRole(issued) : undefined;
    if (!issued || !role) {
      throw Unauthorized('Invalid or expired refresh token');
    }
    const pair = this.pair(issued, role, token);
    if (this.config.refreshReuseGraceS > 0) {
      const sealed = this.seal(refreshToken, pair);
      await this.db.transaction(({ manager }) =>
        this.refreshTokens.keepGracePair(manager, hash, sealed),
      );
    }
    return pair;
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
