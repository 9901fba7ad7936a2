import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { hasRole, isAdmin, type Caller, type MaybeCaller } from '../auth/caller.js';
import { Role } from '../auth/role.js';
import {
  BadRequest,
  Forbidden,
  NotFound,
  PreconditionFailed,
  Unauthorized,
} from '../common/errors.js';
import { isId, newId, nowIso } from '../common/ids.js';
import { MAX_LIMIT, parseListQuery, type ListSpec, type Page } from '../common/list-query.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { WebhookOutbox } from '../webhooks/webhook-outbox.js';
import { DatabaseService } from '../database/database.service.js';
import { listPage } from '../database/list-page.js';
import { keysetSql, type PageWindow } from '../graphql/connection.js';
import { searchRows } from '../search/search-query.js';
import type { CreatePostInput, PatchPostInput, ReplacePostInput } from './dto/post.inputs.js';
import type { Post } from './post.js';
import { POST_BODY_COST } from './post.model.js';
import { POST_COLUMNS, postFromRow, toRestPost, type PostRow } from './posts.mapper.js';

export const POST_LIST_SPEC: ListSpec<never> = {
  sortFields: ['created_at', 'updated_at', 'title'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: {},
  parameters: {
    author_id: {
      description:
        'Only the posts of this user (a user id, e.g. `usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I`).',
      schema: { type: 'string' },
    },
  },
  memberCosts: { body: POST_BODY_COST },
};

const SORT_COLUMNS = { created_at: 'created_at', updated_at: 'updated_at', title: 'title' };

/** Checked against the stored post inside the write transaction (If-Match); false -> 412. */
export type PostPrecondition = (current: Post) => boolean;

/** The one place the posts rules live; REST and GraphQL both call these methods. */
@Injectable()
export class PostsService {
  constructor(
    private readonly db: DatabaseService,
    private readonly counters: CountersRepository,
    private readonly outbox: WebhookOutbox,
  ) {}

  // ---- reads -------------------------------------------------------------------------------

  async findByIds(ids: readonly string[]): Promise<Post[]> {
    const valid = ids.filter((id) => isId('post', id));
    if (valid.length === 0) {
      return [];
    }
    const params = valid.map((_, i) => this.db.p(i + 1)).join(', ');
    const rows = await this.db.query<PostRow>(
      `SELECT ${POST_COLUMNS} FROM posts WHERE id IN (${params}) AND deleted_at IS NULL`,
      valid,
    );
    return rows.map(postFromRow);
  }

  /** One post; `load` lets GraphQL fetch through the request's DataLoader (node() batches). */
  async get(
    caller: MaybeCaller,
    id: string,
    load: (id: string) => Promise<Post | undefined> = async (one) =>
      (await this.findByIds([one]))[0],
  ): Promise<Post> {
    requireRead(caller);
    const post = await load(id);
    if (!post) {
      throw NotFound('Post');
    }
    return post;
  }

  /** REST list: page/limit/sort like users, filter `author_id`. */
  async list(caller: MaybeCaller, rawQuery: Record<string, unknown>): Promise<Page<Post>> {
    requireRead(caller);
    const query = parseListQuery(rawQuery, POST_LIST_SPEC);
    const where = ['deleted_at IS NULL'];
    const params: unknown[] = [];
    const author = rawQuery.author_id;
    if (author !== undefined) {
      if (typeof author !== 'string' || !isId('user', author)) {
        throw BadRequest('Invalid query parameters', [
          { field: 'author_id', message: 'author_id must be a user id' },
        ]);
      }
      params.push(author);
      where.push(`author_id = ${this.db.p(params.length)}`);
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
      this.counters.get(
        typeof author === 'string' ? CountKeys.postsByAuthor(author) : CountKeys.posts(),
      ),
    );
    return { data: rows.map(postFromRow), meta, next };
  }

  /**
   * GraphQL `posts(first, after, since)`: a plain list, oldest first, capped at 100; `after` is the
   * id of the last post already seen, `since` an RFC 3339 lower bound on created_at.
   */
  async feed(
    caller: MaybeCaller,
    opts: { first: number; after?: string; since?: string },
  ): Promise<Post[]> {
    requireRead(caller);
    if (!Number.isInteger(opts.first) || opts.first < 0 || opts.first > MAX_LIMIT) {
      throw BadRequest('Invalid paging arguments', [
        { field: 'first', message: `first must be an integer from 0 to ${MAX_LIMIT}` },
      ]);
    }
    const where = ['deleted_at IS NULL'];
    const params: unknown[] = [];
    if (opts.after !== undefined) {
      if (!isId('post', opts.after)) {
        throw BadRequest('Invalid paging arguments', [
          { field: 'after', message: 'after must be a post id' },
        ]);
      }
      params.push(opts.after);
      const ref = this.db.p(params.length);
      where.push(`(created_at, id) > (SELECT created_at, id FROM posts WHERE id = ${ref})`);
    }
    if (opts.since !== undefined) {
      params.push(opts.since);
      where.push(`created_at >= ${this.db.p(params.length)}`);
    }
    const rows = await this.db.query<PostRow>(
      `SELECT ${POST_COLUMNS} FROM posts WHERE ${where.join(' AND ')} ORDER BY created_at, id LIMIT ${opts.first}`,
      params,
    );
    return rows.map(postFromRow);
  }

  /**
   * The same keyset page of posts for many authors in ONE statement (User.posts batched by
   * DataLoader): rows per author in scan order, at most window.size + 1 each.
   */
  async pageByAuthors(
    caller: MaybeCaller,
    authorIds: readonly string[],
    window: PageWindow,
  ): Promise<Post[]> {
    requireRead(caller);
    if (authorIds.length === 0) {
      return [];
    }
    // one LIMITed index range per author, glued with UNION ALL: the cost is the page size per
    // author, however many posts an author has (a window function would number all of them)
    const params: unknown[] = [];
    const parts = authorIds.map((authorId, i) => {
      params.push(authorId);
      const author = this.db.p(params.length);
      const ks = keysetSql(window, 'created_at', false, (n) => this.db.p(n), params);
      const where = [`author_id = ${author}`, 'deleted_at IS NULL', ...ks.where].join(' AND ');
      return `SELECT * FROM (SELECT ${POST_COLUMNS} FROM posts WHERE ${where}
                ORDER BY ${ks.orderBy} LIMIT ${ks.limit}) a${i}`;
    });
    const rows = await this.db.query<PostRow>(parts.join(' UNION ALL '), params);
    return rows
      .map(postFromRow)
      .sort((a, b) =>
        compareKeys([a.authorId, a.createdAt, a.id], [b.authorId, b.createdAt, b.id]),
      );
  }

  /** Live posts per author: one read of their counters for all of them. */
  async countByAuthors(
    caller: MaybeCaller,
    authorIds: readonly string[],
  ): Promise<Map<string, number>> {
    requireRead(caller);
    const byKey = await this.counters.getMany(authorIds.map((id) => CountKeys.postsByAuthor(id)));
    return new Map(authorIds.map((id) => [id, byKey.get(CountKeys.postsByAuthor(id)) ?? 0]));
  }

  /** Authors (of `authorIds`) with a live post at or before a keyset position (hasPreviousPage). */
  async authorsWithPostsUpTo(
    caller: MaybeCaller,
    authorIds: readonly string[],
    position: [unknown, string],
  ): Promise<Set<string>> {
    requireRead(caller);
    // one LIMIT 1 probe of the author's index range each (DISTINCT would read every earlier post)
    const params: unknown[] = [];
    const parts = authorIds.map((authorId, i) => {
      params.push(authorId, position[0], position[1]);
      const [a, v, id] = [params.length - 2, params.length - 1, params.length].map((n) =>
        this.db.p(n),
      );
      return `SELECT * FROM (SELECT author_id FROM posts WHERE author_id = ${a} AND deleted_at IS NULL
                AND (created_at, id) <= (${v}, ${id}) LIMIT 1) a${i}`;
    });
    const rows = await this.db.query<{ author_id: string }>(parts.join(' UNION ALL '), params);
    return new Set(rows.map((r) => r.author_id));
  }

  /** Posts whose title and body words start with every one of `words` (search-query.ts), newest first. */
  async search(caller: MaybeCaller, words: readonly string[], limit: number): Promise<Post[]> {
    requireRead(caller);
    const rows = await searchRows<PostRow>(this.db, 'posts', POST_COLUMNS, words, limit);
    return rows.map(postFromRow);
  }

  // ---- writes ------------------------------------------------------------------------------

  /** USER and ADMIN may post; the author is the caller. */
  async create(caller: MaybeCaller, input: CreatePostInput): Promise<Post> {
    requireRead(caller);
    if (!hasRole(caller, Role.USER)) {
      throw Forbidden('Guests cannot create posts');
    }
    const now = nowIso();
    const post: Post = {
      id: newId('post'),
      authorId: caller.userId,
      title: input.title,
      body: input.body,
      createdAt: now,
      updatedAt: now,
    };
    await this.db.transaction(async (tx) => {
      await tx.manager.query(
        `INSERT INTO posts (id, author_id, title, body, created_at, updated_at, deleted_at)
         VALUES (${[1, 2, 3, 4, 5, 6].map((n) => this.db.p(n)).join(', ')}, NULL)`,
        [post.id, post.authorId, post.title, post.body, post.createdAt, post.updatedAt],
      );
      this.counters.add(tx, {
        [CountKeys.posts()]: 1,
        [CountKeys.postsByAuthor(post.authorId)]: 1,
      });
      await this.outbox.enqueue(tx, 'post.created', toRestPost(post), post.authorId);
    });
    return post;
  }

  /** PUT: title and body replaced. */
  replace(
    caller: MaybeCaller,
    id: string,
    input: ReplacePostInput,
    precondition?: PostPrecondition,
  ): Promise<Post> {
    return this.update(caller, id, { title: input.title, body: input.body }, precondition);
  }

  /** PATCH and updatePost: only supplied members change. Own posts, or any as ADMIN. */
  async update(
    caller: MaybeCaller,
    id: string,
    patch: PatchPostInput,
    precondition?: PostPrecondition,
  ): Promise<Post> {
    requireRead(caller);
    return this.db.transaction(async (tx) => {
      const { manager } = tx;
      const row = await this.lockedRow(manager, id);
      if (!row || row.deleted) {
        throw NotFound('Post');
      }
      requireOwnerOrAdmin(caller, row.post);
      if (precondition && !precondition(row.post)) {
        throw PreconditionFailed();
      }
      const updated: Post = {
        ...row.post,
        title: patch.title ?? row.post.title,
        body: patch.body ?? row.post.body,
        updatedAt: laterThan(row.post.updatedAt),
      };
      await manager.query(
        `UPDATE posts SET title = ${this.db.p(1)}, body = ${this.db.p(2)}, updated_at = ${this.db.p(3)}
         WHERE id = ${this.db.p(4)}`,
        [updated.title, updated.body, updated.updatedAt, id],
      );
      await this.outbox.enqueue(tx, 'post.updated', toRestPost(updated), updated.authorId);
      return updated;
    });
  }

  /** Soft delete; deleting an already deleted post succeeds again (undefined). */
  async remove(
    caller: MaybeCaller,
    id: string,
    precondition?: PostPrecondition,
  ): Promise<Post | undefined> {
    requireRead(caller);
    return this.db.transaction(async (tx) => {
      const { manager } = tx;
      const row = await this.lockedRow(manager, id);
      if (!row) {
        throw NotFound('Post');
      }
      requireOwnerOrAdmin(caller, row.post);
      if (row.deleted) {
        return undefined;
      }
      if (precondition && !precondition(row.post)) {
        throw PreconditionFailed();
      }
      await manager.query(
        `UPDATE posts SET deleted_at = ${this.db.p(1)} WHERE id = ${this.db.p(2)}`,
        [nowIso(), id],
      );
      this.counters.add(tx, {
        [CountKeys.posts()]: -1,
        [CountKeys.postsByAuthor(row.post.authorId)]: -1,
      });
      await this.outbox.enqueue(tx, 'post.deleted', toRestPost(row.post), row.post.authorId);
      return row.post;
    });
  }

  /** The row (deleted or not), locked for the transaction on PostgreSQL (SQLite writes are serialized). */
  private async lockedRow(
    manager: EntityManager,
    id: string,
  ): Promise<{ post: Post; deleted: boolean } | undefined> {
    if (!isId('post', id)) {
      return undefined;
    }
    const lock = this.db.dialect === 'postgres' ? ' FOR UPDATE' : '';
    const rows = await manager.query<(PostRow & { deleted_at: string | null })[]>(
      `SELECT ${POST_COLUMNS}, deleted_at FROM posts WHERE id = ${this.db.p(1)}${lock}`,
      [id],
    );
    const row = rows[0];
    return row ? { post: postFromRow(row), deleted: row.deleted_at !== null } : undefined;
  }
}

function requireRead(caller: MaybeCaller): asserts caller is Caller {
  if (!caller) {
    throw Unauthorized();
  }
}

/** USER: own posts only; GUEST: none; ADMIN: any (docs/contract.md section 7). */
function requireOwnerOrAdmin(caller: Caller, post: Post): void {
  if (isAdmin(caller)) {
    return;
  }
  if (!hasRole(caller, Role.USER) || caller.userId !== post.authorId) {
    throw Forbidden('You may only change your own posts');
  }
}

/** A timestamp strictly after `previous` (two updates in one millisecond still change the ETag). */
function laterThan(previous: string): string {
  const now = nowIso();
  return now > previous ? now : new Date(Date.parse(previous) + 1).toISOString();
}

/** Lexicographic comparison of string keys (ISO timestamps and ULID ids sort as text). */
function compareKeys(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) {
      return a[i] < b[i] ? -1 : 1;
    }
  }
  return 0;
}
