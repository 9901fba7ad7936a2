import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Role } from '../identity/role.js';
import { keysetAfterSql, orderBySql, releaseBatch } from '../database/paging.js';
import { readPage, type ListRequest } from '../database/page-reader.js';
import { mapPage, type PageValue } from '../database/connection-value.js';
import type { SortTerm } from '../common/list-query.js';
import { DatabaseService } from '../database/database.service.js';
import type { CredentialUsers } from '../identity/credential-users.js';
import { PG_SEARCH_PLAN, searchRows } from '../database/search-index.js';
import { PG_USER_SEARCH_VECTOR } from '../database/search-vectors.js';
import { searchWords } from '../database/search-query.js';
import type { User } from '../domain/user.js';
import { UserEntity } from './user.entity.js';
import { USER_COLUMNS, userFromRow, type UserRow } from './users.row.js';

const SORT_COLUMNS = { created_at: 'created_at', updated_at: 'updated_at', name: 'name' };

/**
 * PostgreSQL transaction-level advisory lock taken by every change that could remove an ADMIN (a
 * demotion, a delete) and by the boot-time promotion, before any user row is locked: those changes
 * run one at a time, so each one's count of the other live ADMINs is the committed truth.
 */
const ADMIN_LOCK_KEY = 1_952_070_301;

/** One word of a user search `q` (docs/admin.md "User search"). */
export interface SearchToken {
  /** The token lower-cased, as typed (matched against the start of the email). */
  raw: string;
  /** Its words as the name index splits text: each must start a word of the name. */
  words: string[];
}

/**
 * The one owner of `users` SQL. Reads outside a transaction are raw SQL on `db.query` (the hot
 * paths: a user by id, list pages, the credential look-ups); every method taking `manager` runs on
 * the caller's transaction.
 */
@Injectable()
export class UsersRepository implements CredentialUsers {
  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  // ---- reads -------------------------------------------------------------------------------

  /** A live user by id. */
  async findById(id: string): Promise<User | undefined> {
    const rows = await this.db.query<UserRow>(
      `SELECT ${USER_COLUMNS} FROM users WHERE id = ${this.p(1)} AND deleted_at IS NULL`,
      [id],
    );
    return rows[0] ? userFromRow(rows[0]) : undefined;
  }

  /** Live users by id, in one statement. */
  async findByIds(ids: readonly string[]): Promise<User[]> {
    if (ids.length === 0) {
      return [];
    }
    const params = ids.map((_, i) => this.p(i + 1)).join(', ');
    const rows = await this.db.query<UserRow>(
      `SELECT ${USER_COLUMNS} FROM users WHERE id IN (${params}) AND deleted_at IS NULL`,
      [...ids],
    );
    return rows.map(userFromRow);
  }

  /**
   * A page of live users (of `role` when given), for REST and GraphQL alike: the paging module
   * reads it (src/database/page-reader.ts); `total` comes from the counters.
   */
  async page(
    role: Role | undefined,
    request: ListRequest,
    total: () => Promise<number>,
  ): Promise<PageValue<User>> {
    const params: unknown[] = [];
    const page = await readPage<UserRow>(
      this.db,
      {
        list: 'users',
        columns: USER_COLUMNS,
        from: 'users',
        where: this.pageFilter(role, params),
        params,
        sortColumns: SORT_COLUMNS,
      },
      request,
      total,
    );
    return mapPage(page, userFromRow);
  }

  /** Live users of a role, oldest first. */
  async byRole(role: Role, limit: number): Promise<User[]> {
    const rows = await this.db.query<UserRow>(
      `SELECT ${USER_COLUMNS} FROM users WHERE role = ${this.p(1)} AND deleted_at IS NULL
       ORDER BY created_at, id LIMIT ${Math.trunc(limit)}`,
      [role],
    );
    return rows.map(userFromRow);
  }

  /** Live users whose name words start with every one of `words`, newest first. */
  async search(words: readonly string[], limit: number): Promise<User[]> {
    const rows = await searchRows<UserRow>(this.db, 'users', USER_COLUMNS, words, limit);
    return rows.map(userFromRow);
  }

  private pageFilter(role: Role | undefined, params: unknown[]): string[] {
    const where = ['deleted_at IS NULL'];
    if (role) {
      params.push(role);
      where.push(`role = ${this.p(params.length)}`);
    }
    return where;
  }

  /** The user by id, live or soft-deleted, read in the transaction of `manager`. */
  async findAnyById(manager: EntityManager, id: string): Promise<User | undefined> {
    const [row] = await manager.query<UserRow[]>(
      `SELECT ${USER_COLUMNS} FROM users WHERE id = ${this.p(1)}`,
      [id],
    );
    return row ? userFromRow(row) : undefined;
  }

  /** Whether the user is live; with `manager`, read in that transaction. */
  async isLive(id: string, manager?: EntityManager): Promise<boolean> {
    const sql = `SELECT id FROM users WHERE id = ${this.p(1)} AND deleted_at IS NULL`;
    const rows = manager
      ? await manager.query<unknown[]>(sql, [id])
      : await this.db.query<{ id: string }>(sql, [id]);
    return rows.length > 0;
  }

  // ---- the credential look-ups (every authenticated request) -------------------------------

  /** The live user's role (unchecked text), or undefined. */
  async liveRole(id: string): Promise<string | undefined> {
    const rows = await this.db.query<{ role: string }>(
      `SELECT role FROM users WHERE id = ${this.p(1)} AND deleted_at IS NULL`,
      [id],
    );
    return rows[0]?.role;
  }

  /** The live user with this (lower-cased) email: id, role and password hash. */
  async findLoginByEmail(
    emailNormalized: string,
  ): Promise<{ id: string; role: string; password_hash: string | null } | undefined> {
    const rows = await this.db.query<{ id: string; role: string; password_hash: string | null }>(
      `SELECT id, role, password_hash FROM users WHERE email_normalized = ${this.p(1)} AND deleted_at IS NULL`,
      [emailNormalized],
    );
    return rows[0];
  }

  /** The live user's role and the instant before which its access tokens are refused. */
  async findTokenState(
    id: string,
  ): Promise<{ role: string; tokens_valid_after: string | null } | undefined> {
    const rows = await this.db.query<{ role: string; tokens_valid_after: string | null }>(
      `SELECT tokens_valid_after, role FROM users WHERE id = ${this.p(1)} AND deleted_at IS NULL`,
      [id],
    );
    return rows[0];
  }

  /** The live user's role and password hash. */
  async findRoleAndPassword(
    id: string,
  ): Promise<{ role: string; password_hash: string | null } | undefined> {
    const rows = await this.db.query<{ role: string; password_hash: string | null }>(
      `SELECT role, password_hash FROM users WHERE id = ${this.p(1)} AND deleted_at IS NULL`,
      [id],
    );
    return rows[0];
  }

  // ---- in a transaction --------------------------------------------------------------------

  /** The row (live or not), locked for the rest of the transaction on PostgreSQL (SQLite writes are serialized). */
  async lockedRow(manager: EntityManager, id: string): Promise<UserEntity | null> {
    const qb = manager
      .getRepository(UserEntity)
      .createQueryBuilder('u')
      .where('u.id = :id', { id });
    if (this.db.dialect === 'postgres') {
      qb.setLock('pessimistic_write');
    }
    return qb.getOne();
  }

  /**
   * The last-admin lock (ADMIN_LOCK_KEY), held until the transaction ends. PostgreSQL only: on
   * SQLite the transactions of the one instance already run one at a time (DatabaseService).
   */
  async lockAdmins(manager: EntityManager): Promise<void> {
    if (this.db.dialect === 'postgres') {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [ADMIN_LOCK_KEY]);
    }
  }

  /** Whether a live ADMIN exists, other than `exceptId` when given. */
  async liveAdminExists(manager: EntityManager, exceptId?: string): Promise<boolean> {
    const rows =
      exceptId === undefined
        ? await manager.query<{ id: string }[]>(
            `SELECT id FROM users WHERE role = ${this.p(1)} AND deleted_at IS NULL LIMIT 1`,
            [Role.ADMIN],
          )
        : await manager.query<{ id: string }[]>(
            `SELECT id FROM users WHERE role = ${this.p(1)} AND deleted_at IS NULL AND id <> ${this.p(2)} LIMIT 1`,
            [Role.ADMIN, exceptId],
          );
    return rows.length > 0;
  }

  /** The id of the live user with this (lower-cased) email. */
  async liveIdByEmail(
    manager: EntityManager,
    emailNormalized: string,
  ): Promise<string | undefined> {
    const [row] = await manager.query<{ id: string }[]>(
      `SELECT id FROM users WHERE email_normalized = ${this.p(1)} AND deleted_at IS NULL`,
      [emailNormalized],
    );
    return row?.id;
  }

  /** Inserts the row; a taken email fails with the dialect's unique violation. */
  async insert(manager: EntityManager, entity: UserEntity): Promise<void> {
    await manager.insert(UserEntity, entity);
  }

  /** Writes `changes` to the row (a soft delete sets `deletedAt`). */
  async update(manager: EntityManager, id: string, changes: Partial<UserEntity>): Promise<void> {
    await manager.update(UserEntity, { id }, changes);
  }

  private searchWhere(
    tokens: readonly SearchToken[],
    emails: boolean,
    role: string | undefined,
    params: unknown[],
  ): string[] {
    const bind = (v: unknown) => {
      params.push(v);
      return this.db.p(params.length);
    };
    const pg = this.db.dialect === 'postgres';
    const where = ['deleted_at IS NULL'];
    if (role !== undefined) {
      where.push(`role = ${bind(role)}`);
    }
    for (const token of tokens) {
      if (pg) {
        // one bitmap scan per index, OR-ed (PG_SEARCH_PLAN keeps the planner off the created_at walk)
        const either: string[] = [];
        if (token.words.length > 0) {
          either.push(
            `${PG_USER_SEARCH_VECTOR} @@ to_tsquery('simple'::regconfig, ${bind(token.words.map((w) => `${w}:*`).join(' & '))})`,
          );
        }
        if (emails) {
          const col = 'email_normalized COLLATE "C"';
          either.push(
            `(${col} >= ${bind(token.raw)} AND ${col} < ${bind(`${token.raw}\u{10FFFF}`)})`,
          );
        }
        where.push(either.length > 0 ? `(${either.join(' OR ')})` : '1 = 0');
        continue;
      }
      // SQLite: the matching ids, from the name index and the e-mail range, as one IN list that
      // drives the query (an OR of the two would walk the whole created_at index for a rare term)
      const sources: string[] = [];
      if (token.words.length > 0) {
        sources.push(
          `SELECT r.user_id FROM users_fts JOIN users_fts_rows r ON r.rowid = users_fts.rowid
             WHERE users_fts MATCH ${bind(token.words.map((w) => `"${w}"*`).join(' '))}`,
        );
      }
      if (emails) {
        sources.push(
          `SELECT id FROM users WHERE deleted_at IS NULL AND email_normalized >= ${bind(token.raw)}
             AND email_normalized < ${bind(`${token.raw}\u{10FFFF}`)}`,
        );
      }
      where.push(sources.length > 0 ? `id IN (${sources.join(' UNION ')})` : '1 = 0');
    }
    return where;
  }

  /** The users export's rows (see scanUsers). */
  scanForExport(
    role: string | undefined,
    sort: readonly SortTerm[],
    columns: Record<string, string>,
  ) {
    return scanUsers(this.db, role, sort, columns);
  }

  /** One page (OFFSET) and the exact number of matches. */
  async searchPage(
    tokens: readonly SearchToken[],
    emails: boolean,
    role: string | undefined,
    limit: number,
    offset: number,
  ): Promise<{ rows: UserRow[]; total: number }> {
    const params: unknown[] = [];
    const where = this.searchWhere(tokens, emails, role, params).join(' AND ');
    const n = params.length;
    // SQLite: `+` keeps the planner from walking the created_at index to avoid a sort: the matches
    // (usually few) are read through the id list and sorted, so a rare term costs the same at 1M rows
    const order =
      this.db.dialect === 'postgres' ? 'created_at DESC, id DESC' : '+created_at DESC, +id DESC';
    const rowsSql = `SELECT ${USER_COLUMNS} FROM users WHERE ${where}
      ORDER BY ${order} LIMIT ${this.db.p(n + 1)} OFFSET ${this.db.p(n + 2)}`;
    const countSql = `SELECT COUNT(*) AS n FROM users WHERE ${where}`;
    const run = async (query: <R>(sql: string, p: unknown[]) => Promise<R[]>) => {
      const rows = await query<UserRow>(rowsSql, [...params, limit, offset]);
      const [count] = await query<{ n: number | string }>(countSql, params);
      return { rows, total: Number(count?.n ?? 0) };
    };
    if (this.db.dialect !== 'postgres') {
      return run((sql, p) => this.db.query(sql, p));
    }
    // the GIN and e-mail indexes, not a walk of the created_at index (src/database/search-query.ts)
    return this.db.transaction(async (tx) => {
      await tx.manager.query(PG_SEARCH_PLAN);
      return run((sql, p) => tx.manager.query(sql, p));
    });
  }
}

const EXPORT_BATCH = 500;

/**
 * Every live user (of `role`) in the order of `sort` (columns whitelisted by the caller), in keyset
 * batches of EXPORT_BATCH rows: memory stays at one batch (the users export). Each batch is yielded
 * whole and emptied once its reader is done with it (releaseBatch).
 */
async function* scanUsers(
  db: DatabaseService,
  role: string | undefined,
  sort: readonly SortTerm[],
  columns: Record<string, string>,
): AsyncGenerator<UserRow[]> {
  let after: { values: (string | number)[]; id: string } | undefined;
  for (;;) {
    const params: unknown[] = [];
    const where = ['deleted_at IS NULL'];
    if (role !== undefined) {
      params.push(role);
      where.push(`role = ${db.p(params.length)}`);
    }
    if (after) {
      where.push(keysetAfterSql(sort, columns, after, (n) => db.p(n), params));
    }
    params.push(EXPORT_BATCH);
    const rows = await db.query<UserRow>(
      `SELECT ${USER_COLUMNS} FROM users WHERE ${where.join(' AND ')}
       ORDER BY ${orderBySql([...sort], columns)} LIMIT ${db.p(params.length)}`,
      params,
    );
    if (rows.length === 0) {
      return;
    }
    const last = rows[rows.length - 1] as UserRow & Record<string, string | number>;
    after = { values: sort.map((t) => last[columns[t.field]]), id: last.id };
    const full = rows.length === EXPORT_BATCH;
    yield rows;
    releaseBatch(rows);
    if (!full) {
      return;
    }
  }
}

/** `q` as tokens (whitespace-separated, lower-cased, duplicates dropped). */
export function searchTokens(q: string): SearchToken[] {
  const raws = [
    ...new Set(
      q
        .toLowerCase()
        .split(/\s+/)
        .filter((t) => t !== ''),
    ),
  ];
  return raws.map((raw) => ({ raw, words: searchWords(raw) }));
}
