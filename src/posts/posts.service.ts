import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { hasRole, isAdmin, type Caller, type MaybeCaller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import {
  BadRequest,
  Forbidden,
  NotFound,
  PreconditionFailed,
  Unauthorized,
} from '../common/errors.js';
import { isId, newId, nowIso } from '../common/ids.js';
import {
  MAX_LIMIT,
  parseListQuery,
  type ListSpec,
  type Page,
  type PageArgs,
} from '../common/list-query.js';
import { ChangeRecord } from '../changes/change-record.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { DatabaseService } from '../database/database.service.js';
import { encodeCursor, pageWindow } from '../database/paging.js';
import { connectionFromRows, type ConnectionValue } from '../database/connection-value.js';
import type { CreatePostInput, PatchPostInput, ReplacePostInput } from './dto/post.inputs.js';
import type { Post } from '../domain/post.js';
import { POST_BODY_COST } from './post.model.js';
import { PostsRepository } from './posts.repository.js';
import { postOf } from './posts.mapper.js';

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

/**
 * Cursor key of a user's posts, oldest first: the same token as `GET /posts?author_id=` pages with
 * (its default sort, `created_at`), so the two lists share one cursor format.
 */
const AUTHOR_POSTS_KEY = 'posts:created_at';

/** Checked against the stored post inside the write transaction (If-Match); false -> 412. */
export type PostPrecondition = (current: Post) => boolean;

/** The one place the posts rules live; REST and GraphQL both call these methods. */
@Injectable()
export class PostsService {
  constructor(
    private readonly db: DatabaseService,
    private readonly counters: CountersRepository,
    private readonly posts: PostsRepository,
    private readonly changes: ChangeRecord,
  ) {}

  // ---- reads -------------------------------------------------------------------------------

  async findByIds(ids: readonly string[]): Promise<Post[]> {
    const valid = ids.filter((id) => isId('post', id));
    return this.posts.findByIds(valid);
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
    const author = rawQuery.author_id;
    if (author !== undefined) {
      if (typeof author !== 'string' || !isId('user', author)) {
        throw BadRequest('Invalid query parameters', [
          { field: 'author_id', message: 'author_id must be a user id' },
        ]);
      }
    }
    return this.posts.list(
      query,
      typeof author === 'string' ? author : undefined,
      this.counters.get(
        typeof author === 'string' ? CountKeys.postsByAuthor(author) : CountKeys.posts(),
      ),
    );
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
    if (opts.after !== undefined) {
      if (!isId('post', opts.after)) {
        throw BadRequest('Invalid paging arguments', [
          { field: 'after', message: 'after must be a post id' },
        ]);
      }
    }
    return this.posts.feed(opts);
  }

  /**
   * `User.posts(first, after)` for many authors at once (batched by DataLoader): one connection per
   * author of `authorIds`, in that order, oldest first. ONE statement reads every author's page
   * (window function); the totals (one read of their counters) and, with `after`, the
   * hasPreviousPage checks run once for the whole batch, and only when a connection selects them.
   */
  async postsOfAuthors(
    caller: MaybeCaller,
    authorIds: readonly string[],
    args: Pick<PageArgs, 'first' | 'after'>,
  ): Promise<ConnectionValue<Post>[]> {
    const window = pageWindow({ first: args.first, after: args.after }, AUTHOR_POSTS_KEY);
    requireRead(caller);
    const rows = await this.posts.pageByAuthors(authorIds, window);
    rows.sort((a, b) =>
      compareKeys([a.authorId, a.createdAt, a.id], [b.authorId, b.createdAt, b.id]),
    );
    const byAuthor = new Map<string, Post[]>(authorIds.map((id) => [id, []]));
    for (const post of rows) {
      byAuthor.get(post.authorId)?.push(post);
    }
    let counts: Promise<Map<string, number>> | undefined;
    const countOf = async (authorId: string) => {
      counts ??= this.counters.getMany(authorIds.map((id) => CountKeys.postsByAuthor(id)));
      return (await counts).get(CountKeys.postsByAuthor(authorId)) ?? 0;
    };
    let earlier: Promise<Set<string>> | undefined;
    const hasEarlier = async (authorId: string) => {
      earlier ??= this.posts.authorsWithPostsUpTo(authorIds, window.after!);
      return (await earlier).has(authorId);
    };
    return authorIds.map((authorId) =>
      connectionFromRows(
        byAuthor.get(authorId) ?? [],
        window,
        (p) => encodeCursor(AUTHOR_POSTS_KEY, [p.createdAt], p.id),
        { totalCount: () => countOf(authorId), existsBeyond: () => hasEarlier(authorId) },
      ),
    );
  }

  /** Posts whose title and body words start with every one of `words` (search-query.ts), newest first. */
  async search(caller: MaybeCaller, words: readonly string[], limit: number): Promise<Post[]> {
    requireRead(caller);
    return this.posts.search(words, limit);
  }

  // ---- writes ------------------------------------------------------------------------------

  /** USER and ADMIN may post; the author is the caller. */
  async create(caller: MaybeCaller, input: CreatePostInput): Promise<Post> {
    requireRead(caller);
    if (!hasRole(caller, Role.USER)) {
      throw Forbidden('Guests cannot create posts');
    }
    const now = nowIso();
    const post: Post = postOf({
      id: newId('post'),
      authorId: caller.userId,
      title: input.title,
      body: input.body,
      createdAt: now,
      updatedAt: now,
    });
    await this.db.transaction(async (tx) => {
      await this.posts.insert(tx.manager, post);
      await this.changes.record(tx, { type: 'post.created', post, actor: caller });
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
      const updated: Post = postOf({
        id: row.post.id,
        authorId: row.post.authorId,
        title: patch.title ?? row.post.title,
        body: patch.body ?? row.post.body,
        createdAt: row.post.createdAt,
        updatedAt: laterThan(row.post.updatedAt),
      });
      await this.posts.update(manager, updated);
      await this.changes.record(tx, {
        type: 'post.updated',
        before: row.post,
        after: updated,
        actor: caller,
      });
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
      await this.posts.softDelete(manager, id, nowIso());
      await this.changes.record(tx, { type: 'post.deleted', post: row.post, actor: caller });
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
    return this.posts.lockedRow(manager, id);
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
