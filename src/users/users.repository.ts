import { Injectable } from '@nestjs/common';
import { keysetAfterSql } from '../common/keyset.js';
import { orderBySql, type SortTerm } from '../common/list-query.js';
import { DatabaseService } from '../database/database.service.js';
import { PG_USER_SEARCH_VECTOR } from '../database/migrations/1764300000019-search-index.js';
import { PG_SEARCH_PLAN, searchWords } from '../search/search-query.js';
import { USER_COLUMNS, type UserRow } from './users.mapper.js';

/** One word of a user search `q` (docs/admin.md "User search"). */
export interface SearchToken {
  /** The token lower-cased, as typed (matched against the start of the email). */
  raw: string;
  /** Its words as the name index splits text: each must start a word of the name. */
  words: string[];
}

/**
 * The user search's SQL: each token matches when all its words start words of the name (the
 * name index of migration 1764300000019: FTS5 on SQLite, GIN on PostgreSQL) or, when `emails`, when
 * the email starts with the token (the e-mail index of migration 1764400000024, a byte range).
 * Every token must match. Live users only, newest first.
 */
@Injectable()
export class UsersRepository {
  constructor(private readonly db: DatabaseService) {}

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
      const either: string[] = [];
      if (token.words.length > 0) {
        either.push(
          pg
            ? `${PG_USER_SEARCH_VECTOR} @@ to_tsquery('simple'::regconfig, ${bind(token.words.map((w) => `${w}:*`).join(' & '))})`
            : `id IN (SELECT r.user_id FROM users_fts JOIN users_fts_rows r ON r.rowid = users_fts.rowid
                       WHERE users_fts MATCH ${bind(token.words.map((w) => `"${w}"*`).join(' '))})`,
        );
      }
      if (emails) {
        const col = pg ? 'email_normalized COLLATE "C"' : 'email_normalized';
        either.push(
          `(${col} >= ${bind(token.raw)} AND ${col} < ${bind(`${token.raw}\u{10FFFF}`)})`,
        );
      }
      where.push(either.length > 0 ? `(${either.join(' OR ')})` : '1 = 0');
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
    const rowsSql = `SELECT ${USER_COLUMNS} FROM users WHERE ${where}
      ORDER BY created_at DESC, id DESC LIMIT ${this.db.p(n + 1)} OFFSET ${this.db.p(n + 2)}`;
    const countSql = `SELECT COUNT(*) AS n FROM users WHERE ${where}`;
    const run = async (query: <R>(sql: string, p: unknown[]) => Promise<R[]>) => {
      const rows = await query<UserRow>(rowsSql, [...params, limit, offset]);
      const [count] = await query<{ n: number | string }>(countSql, params);
      return { rows, total: Number(count?.n ?? 0) };
    };
    if (this.db.dialect !== 'postgres') {
      return run((sql, p) => this.db.query(sql, p));
    }
    // the GIN and e-mail indexes, not a walk of the created_at index (src/search/search-query.ts)
    return this.db.transaction(async (tx) => {
      await tx.manager.query(PG_SEARCH_PLAN);
      return run((sql, p) => tx.manager.query(sql, p));
    });
  }
}

const EXPORT_BATCH = 500;

/**
 * Every live user (of `role`) in the order of `sort` (columns whitelisted by the caller), in keyset
 * batches of EXPORT_BATCH rows: memory stays at one batch (the users export).
 */
export async function* scanUsers(
  db: DatabaseService,
  role: string | undefined,
  sort: readonly SortTerm[],
  columns: Record<string, string>,
): AsyncGenerator<UserRow> {
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
    yield* rows;
    if (rows.length < EXPORT_BATCH) {
      return;
    }
    const last = rows[rows.length - 1] as UserRow & Record<string, string | number>;
    after = { values: sort.map((t) => last[columns[t.field]]), id: last.id };
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
