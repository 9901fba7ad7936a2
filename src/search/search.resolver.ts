import { Args, Context, createUnionType, Directive, Int, Query, Resolver } from '@nestjs/graphql';
import { BadRequest } from '../common/errors.js';
import { MAX_LIMIT } from '../common/list-query.js';
import type { GqlContext } from '../graphql/context.js';
import { typeNameOf } from '../graphql/node.js';
import type { Post } from '../domain/post.js';
import { PostModel } from '../posts/post.model.js';
import { PostsService } from '../posts/posts.service.js';
import type { User } from '../domain/user.js';
import { UserModel } from '../users/user.model.js';
import { UsersService } from '../users/users.service.js';
import { MAX_SEARCH_WORDS, searchWords } from '../database/search-query.js';

/**
 * The own cost of one `search` (its selection is charged per item on top, as for any list): two
 * index queries whose work grows with the rows that match, so ten of them fill a request's limit.
 */
const SEARCH_COST = 100;

const SearchResult = createUnionType({
  name: 'SearchResult',
  description: 'A user (matched by name) or a post (matched by title or body).',
  types: () => [UserModel, PostModel] as const,
  resolveType: (value: { id?: unknown }) => typeNameOf(value),
});

@Resolver()
export class SearchResolver {
  constructor(
    private readonly users: UsersService,
    private readonly posts: PostsService,
  ) {}

  @Directive(`@cost(weight: ${SEARCH_COST})`)
  @Query(() => [SearchResult], {
    description:
      'Users whose name, and posts whose title and body, contain a word starting with each word of ' +
      '`term` (case-insensitive; words are runs of letters and digits, everything else separates ' +
      `them; at most ${MAX_SEARCH_WORDS} words), newest first. A term without letters or digits ` +
      'matches nothing.',
  })
  @Directive('@auth(requires: GUEST, scopes: ["users:read", "posts:read"])')
  async search(
    @Context() ctx: GqlContext,
    @Args('term', { description: `1-100 characters, at most ${MAX_SEARCH_WORDS} words.` })
    term: string,
    @Args('first', { type: () => Int, defaultValue: 20, description: 'At most 100.' })
    first: number,
  ): Promise<(User | Post)[]> {
    const trimmed = term.trim();
    const words = trimmed.length <= 100 ? searchWords(trimmed) : [];
    const details = [];
    if (trimmed.length < 1 || trimmed.length > 100) {
      details.push({ field: 'term', message: 'term must be 1 to 100 characters' });
    } else if (words.length > MAX_SEARCH_WORDS) {
      details.push({ field: 'term', message: `term must have at most ${MAX_SEARCH_WORDS} words` });
    }
    if (!Number.isInteger(first) || first < 0 || first > MAX_LIMIT) {
      details.push({ field: 'first', message: `first must be an integer from 0 to ${MAX_LIMIT}` });
    }
    if (details.length > 0) {
      throw BadRequest('Invalid search arguments', details);
    }
    if (words.length === 0 || first === 0) {
      return [];
    }
    const [users, posts] = await Promise.all([
      this.users.search(ctx.caller, words, first),
      this.posts.search(ctx.caller, words, first),
    ]);
    return [...users, ...posts]
      .sort((a, b) =>
        a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1,
      )
      .slice(0, first);
  }
}
