import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ListQuery, PageMeta } from '../common/list-query.js';
import { numberedPage, orderBySql } from '../database/paging.js';
import { DatabaseService } from '../database/database.service.js';
import type { Role } from './role.js';

/** A stored key as the API shows it (never its hash). */
/** An API key as stored, in its REST member names (never its hash). */
export interface ApiKeyRecord {
  id: string;
  user_id: string;
  name: string;
  prefix: string;
  role: Role;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  created_at: string;
}

/** What verifying a presented key needs: the key row and its owner's role. */
export interface ApiKeyCredentialRow {
  id: string;
  user_id: string;
  role: string;
  key_hash: string;
  expires_at: string | null;
  revoked_at: string | null;
  user_role: string;
}

const COLUMNS = 'id, user_id, name, prefix, role, expires_at, last_used_at, revoked_at, created_at';

/**
 * The one owner of `api_keys` SQL. Writes run on the caller's transaction (`manager`); reads are raw
 * SQL on `db.query` (the key lookup is on every API-key request).
 */
@Injectable()
export class ApiKeysRepository {
  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  async insert(manager: EntityManager, key: ApiKeyRecord, keyHash: string): Promise<void> {
    const p = (n: number) => this.p(n);
    await manager.query(
      `INSERT INTO api_keys (id, user_id, name, prefix, key_hash, role, expires_at, last_used_at, revoked_at, created_at)
       VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, NULL, NULL, ${p(8)})`,
      [
        key.id,
        key.user_id,
        key.name,
        key.prefix,
        keyHash,
        key.role,
        key.expires_at,
        key.created_at,
      ],
    );
  }

  /**
   * One page of keys, oldest first unless sorted otherwise: of `userId` only when given, and of the
   * `roles` only when given (role names come from the Role enum, never from input).
   */
  async page(
    query: ListQuery,
    filter: { userId?: string; roles?: readonly string[] },
  ): Promise<{ rows: ApiKeyRecord[]; meta: PageMeta }> {
    const conditions = filter.userId === undefined ? [] : [`user_id = ${this.p(1)}`];
    const params: unknown[] = filter.userId === undefined ? [] : [filter.userId];
    if (filter.roles) {
      conditions.push(`role IN (${filter.roles.map((r) => `'${r}'`).join(', ')})`);
    }
    const where = conditions.length > 0 ? conditions.join(' AND ') : '1 = 1';
    return numberedPage<ApiKeyRecord>(
      this.db,
      {
        columns: COLUMNS,
        from: 'api_keys',
        where,
        orderBy: orderBySql(query.sort, { created_at: 'created_at' }),
      },
      params,
      query,
    );
  }

  async find(id: string): Promise<ApiKeyRecord | undefined> {
    const rows = await this.db.query<ApiKeyRecord>(
      `SELECT ${COLUMNS} FROM api_keys WHERE id = ${this.p(1)}`,
      [id],
    );
    return rows[0];
  }

  /** The key with this SHA-256 hash, if its owner is live, with the owner's role. */
  async findCredential(keyHash: string): Promise<ApiKeyCredentialRow | undefined> {
    const rows = await this.db.query<ApiKeyCredentialRow>(
      `SELECT k.id, k.user_id, k.role, k.key_hash, k.expires_at, k.revoked_at, u.role AS user_role
         FROM api_keys k JOIN users u ON u.id = k.user_id
        WHERE k.key_hash = ${this.p(1)} AND u.deleted_at IS NULL`,
      [keyHash],
    );
    return rows[0];
  }

  async revoke(manager: EntityManager, id: string, at: string): Promise<void> {
    await manager.query(`UPDATE api_keys SET revoked_at = ${this.p(1)} WHERE id = ${this.p(2)}`, [
      at,
      id,
    ]);
  }

  async touchLastUsed(manager: EntityManager, id: string, at: string): Promise<void> {
    await manager.query(`UPDATE api_keys SET last_used_at = ${this.p(1)} WHERE id = ${this.p(2)}`, [
      at,
      id,
    ]);
  }
}
