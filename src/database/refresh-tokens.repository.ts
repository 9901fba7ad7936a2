import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId } from '../common/ids.js';
import { DatabaseService } from './database.service.js';

export interface ClaimedToken {
  id: string;
  user_id: string;
  family_id: string;
}

/**
 * The one owner of `refresh_tokens` SQL. Every method runs on the caller's transaction (`manager`),
 * so a rotation, a reuse revocation or a password change commits or rolls back with its work.
 */
@Injectable()
export class RefreshTokensRepository {
  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  /**
   * Marks an unused, unexpired token used and returns it; undefined when it is unknown, expired or
   * already used. One conditional UPDATE (not a read then a write): of any number of concurrent
   * callers, on any number of instances, exactly one gets the row. On PostgreSQL the others wait on
   * the row lock and then see `used_at` set; on SQLite transactions are serialized.
   */
  async claim(
    manager: EntityManager,
    tokenHash: string,
    now: string,
  ): Promise<ClaimedToken | undefined> {
    if (!manager.queryRunner) {
      throw new Error('claim() must run inside a transaction');
    }
    // structured result: UPDATE … RETURNING rows arrive in `records` on both drivers
    const result = (await manager.queryRunner.query(
      `UPDATE refresh_tokens SET used_at = ${this.p(1)}
        WHERE token_hash = ${this.p(2)} AND used_at IS NULL AND expires_at > ${this.p(3)}
        RETURNING id, user_id, family_id`,
      [now, tokenHash, now],
      true,
    )) as { records?: ClaimedToken[] };
    return result.records?.[0];
  }

  /** The family of a token that was already used (a replay), when it was used, or undefined. */
  async usedFamily(
    manager: EntityManager,
    tokenHash: string,
  ): Promise<{ family: string; userId: string; usedAt: string } | undefined> {
    const rows = await manager.query<
      { family_id: string | null; id: string; user_id: string; used_at: string }[]
    >(
      `SELECT id, family_id, user_id, used_at FROM refresh_tokens WHERE token_hash = ${this.p(1)} AND used_at IS NOT NULL`,
      [tokenHash],
    );
    const row = rows[0];
    return row
      ? { family: row.family_id ?? row.id, userId: row.user_id, usedAt: String(row.used_at) }
      : undefined;
  }

  /** The family of a token, used or not (sign-out); undefined when it is unknown. */
  async familyOf(manager: EntityManager, tokenHash: string): Promise<string | undefined> {
    const rows = await manager.query<{ family_id: string | null; id: string }[]>(
      `SELECT id, family_id FROM refresh_tokens WHERE token_hash = ${this.p(1)}`,
      [tokenHash],
    );
    const row = rows[0];
    return row ? (row.family_id ?? row.id) : undefined;
  }

  /** Keeps the (encrypted) pair a used token was traded for, for its reuse grace window. */
  async keepGracePair(manager: EntityManager, tokenHash: string, sealed: string): Promise<void> {
    await manager.query(
      `UPDATE refresh_tokens SET grace_pair = ${this.p(1)} WHERE token_hash = ${this.p(2)}`,
      [sealed, tokenHash],
    );
  }

  /** The kept pair of a used token (undefined while the rotation has not stored it, or once gone). */
  async gracePair(tokenHash: string): Promise<string | undefined> {
    const rows = await this.db.query<{ grace_pair: string | null }>(
      `SELECT grace_pair FROM refresh_tokens WHERE token_hash = ${this.p(1)} AND used_at IS NOT NULL`,
      [tokenHash],
    );
    return rows[0]?.grace_pair ?? undefined;
  }

  async insert(
    manager: EntityManager,
    token: { userId: string; familyId?: string; hash: string; expiresAt: string; now: string },
  ): Promise<string> {
    const id = newId('refreshToken');
    await manager.query(
      `INSERT INTO refresh_tokens (id, user_id, family_id, token_hash, expires_at, used_at, created_at)
       VALUES (${this.p(1)}, ${this.p(2)}, ${this.p(3)}, ${this.p(4)}, ${this.p(5)}, NULL, ${this.p(6)})`,
      [id, token.userId, token.familyId ?? id, token.hash, token.expiresAt, token.now],
    );
    return id;
  }

  /** Ends one sign-in: every token rotated from it, used or not. */
  async revokeFamily(manager: EntityManager, familyId: string): Promise<void> {
    await manager.query(`DELETE FROM refresh_tokens WHERE family_id = ${this.p(1)}`, [familyId]);
  }

  /** Ends every sign-in of a user (password change). */
  async revokeUser(manager: EntityManager, userId: string): Promise<void> {
    await manager.query(`DELETE FROM refresh_tokens WHERE user_id = ${this.p(1)}`, [userId]);
  }
}
