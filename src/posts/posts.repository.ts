import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ListQuery, Page } from '../common/list-query.js';
import { DatabaseService } from '../database/database.service.js';
import {
  keysetParams,
  keysetSql,
  listPage,
  windowShape,
  type PageWindow,
} from '../database/paging.js';
import { SqlTexts } from '../database/sql-texts.js';
import { searchRows } from '../database/search-index.js';
import type { Post } from '../domain/post.js';
import { POST_COLUMNS, postFromRow, type PostRow } from './posts.row.js';

const SORT_COLUMNS = { created_at: 'created_at', updated_at: 'updated_at', title: 'title' };

/**
 * The one owner of `posts` SQL. Reads outside a transaction are raw SQL on `db.query` (the hot
 * paths: posts by id, list pages, the per-author pages); every method taking `manager` runs on the
 * caller's transaction.
 */
@Injectable()
export class PostsRepository {
  /** The batched statements' texts, by how many authors they read (sql-texts.ts). */
  private readonly texts = new SqlTexts();

  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  /** Live posts by id, in one statement. */
  async findByIds(ids: readonly string[]): Promise<Post[]> {
    if (ids.length === 0) {
      return [];
    }
    const params = ids.map((_, i) => this.p(i + 1)).join(', ');
    const rows = await this.db.query<PostRow>(
      `SELECT ${POST_COLUMNS} FROM posts WHERE id IN (${params}) AND deleted_at IS NULL`,
      [...ids],
    );
    return rows.map(postFromRow);
  }

  /** One REST page of live posts (of `authorId` when given); `total` comes from the counters. */
  async list(
    query: ListQuery,
    authorId: string | undefined,
    total: Promise<number>,
  ): Promise<Page<Post>> {
    const where = ['deleted_at IS NULL'];
    const params: unknown[] = [];
    if (authorId !== undefined) {
      params.push(authorId);
      where.push(`author_id = ${this.p(params.length)}`);
    }
    const { rows, meta, next } = await listPage<PostRow>(
      this.db,
      {
        list: 'posts',
        columns: POST_COLUMNS,
        from: 'posts',
        where,
        params,
        sortColumns: SORT_COLUMNS,
      },
      query,
      total,
    );
    return { data: rows.map(postFromRow), meta, next };
  }

  /** Live posts oldest first: after the post `after` (an id), created at or after `since`. */
  async feed(opts: { first: number; after?: string; since?: string }): Promise<Post[]> {
    const where = ['deleted_at IS NULL'];
    const params: unknown[] = [];
    if (opts.after !== undefined) {
      params.push(opts.after);
      const ref = this.p(params.length);
      where.push(`(created_at, id) > (SELECT created_at, id FROM posts WHERE id = ${ref})`);
    }
    if (opts.since !== undefined) {
      params.push(opts.since);
      where.push(`created_at >= ${this.p(params.length)}`);
    }
    const rows = await this.db.query<PostRow>(
      `SELECT ${POST_COLUMNS} FROM posts WHERE ${where.join(' AND ')} ORDER BY created_at, id LIMIT ${Math.trunc(opts.first)}`,
      params,
    );
    return rows.map(postFromRow);
  }

  /**
   * The same keyset page of live posts for many authors in ONE statement: rows per author in scan
   * order, at most window.size + 1 each (in no particular order across authors).
   */
  async pageByAuthors(authorIds: readonly string[], window: PageWindow): Promise<Post[]> {
    if (authorIds.length === 0) {
      return [];
    }
    const bounds = keysetParams(window);
    const params: unknown[] = [];
    for (const authorId of authorIds) {
      params.push(authorId, ...bounds);
    }
    // one LIMITed index range per author, glued with UNION ALL: the cost is the page size per
    // author, however many posts an author has (a window function would number all of them)
    const sql = this.texts.get(`page:${authorIds.length}:${windowShape(window)}`, () => {
      const numbered: unknown[] = [];
      const parts = authorIds.map((authorId, i) => {
        numbered.push(authorId);
        const author = this.p(numbered.length);
        const ks = keysetSql(window, 'created_at', false, (n) => this.p(n), numbered);
        const where = [`author_id = ${author}`, 'deleted_at IS NULL', ...ks.where].join(' AND ');
        return `SELECT * FROM (SELECT ${POST_COLUMNS} FROM posts WHERE ${where}
                ORDER BY ${ks.orderBy} LIMIT ${ks.limit}) a${i}`;
      });
      return parts.join(' UNION ALL ');
    });
    const rows = await this.db.query<PostRow>(sql, params);
    return rows.map(postFromRow);
  }

  /** Authors (of `authorIds`) with a live post at or before a keyset position. */
  async authorsWithPostsUpTo(
    authorIds: readonly string[],
    position: [unknown, string],
  ): Promise<Set<string>> {
    if (authorIds.length === 0) {
      return new Set();
    }
    const params: unknown[] = [];
    for (const authorId of authorIds) {
      params.push(authorId, position[0], position[1]);
    }
    // one LIMIT 1 probe of the author's index range each (DISTINCT would read every earlier post)
    const sql = this.texts.get(`upto:${authorIds.length}`, () =>
      authorIds
        .map((_, i) => {
          const [a, v, id] = [3 * i + 1, 3 * i + 2, 3 * i + 3].map((n) => this.p(n));
          return `SELECT * FROM (SELECT author_id FROM posts WHERE author_id = ${a} AND deleted_at IS NULL
                AND (created_at, id) <= (${v}, ${id}) LIMIT 1) a${i}`;
        })
        .join(' UNION ALL '),
    );
    const rows = await this.db.query<{ author_id: string }>(sql, params);
    return new Set(rows.map((r) => r.author_id));
  }

  /** Live posts whose title and body words start with every one of `words`, newest first. */
  async search(words: readonly string[], limit: number): Promise<Post[]> {
    const rows = await searchRows<PostRow>(this.db, 'posts', POST_COLUMNS, words, limit);
    return rows.map(postFromRow);
  }

  // ---- in a transaction --------------------------------------------------------------------

  async insert(manager: EntityManager, post: Post): Promise<void> {
    await manager.query(
      `INSERT INTO posts (id, author_id, title, body, created_at, updated_at, deleted_at)
       VALUES (${[1, 2, 3, 4, 5, 6].map((n) => this.p(n)).join(', ')}, NULL)`,
      [post.id, post.authorId, post.title, post.body, post.createdAt, post.updatedAt],
    );
  }

  /** Writes the post's title, body and updated_at. */
  async update(manager: EntityManager, post: Post): Promise<void> {
    await manager.query(
      `UPDATE posts SET title = ${this.p(1)}, body = ${this.p(2)}, updated_at = ${this.p(3)}
       WHERE id = ${this.p(4)}`,
      [post.title, post.body, post.updatedAt, post.id],
    );
  }

  async softDelete(manager: EntityManager, id: string, at: string): Promise<void> {
    await manager.query(`UPDATE posts SET deleted_at = ${this.p(1)} WHERE id = ${this.p(2)}`, [
      at,
      id,
    ]);
  }

  /** The row (deleted or not), locked for the transaction on PostgreSQL (SQLite writes are serialized). */
  async lockedRow(
    manager: EntityManager,
    id: string,
  ): Promise<{ post: Post; deleted: boolean } | undefined> {
    const lock = this.db.dialect === 'postgres' ? ' FOR UPDATE' : '';
    const rows = await manager.query<(PostRow & { deleted_at: string | null })[]>(
      `SELECT ${POST_COLUMNS}, deleted_at FROM posts WHERE id = ${this.p(1)}${lock}`,
      [id],
    );
    const row = rows[0];
    return row ? { post: postFromRow(row), deleted: row.deleted_at !== null } : undefined;
  }
}
