import { Directive, Field, ID, ObjectType } from '@nestjs/graphql';
import { Connection } from '../graphql/connection.js';
import { Node } from '../graphql/node.js';
import { DateTimeScalar } from '../graphql/scalars/date-time.scalar.js';

/** `Post.body`: up to 50 000 characters, 1 point per 2 500 (docs/graphql.md); REST lists too. */
export const POST_BODY_COST = 20;

/** GraphQL `Post` (`author` is resolved in posts.resolver.ts). */
@ObjectType('Post', { implements: () => [Node] })
@Directive('@auth(scopes: ["posts:read"])')
@Directive('@cacheControl(maxAge: 60)')
export class PostModel implements Node {
  @Field(() => ID)
  id!: string;

  @Field({ description: '1-200 characters.' })
  title!: string;

  @Field({ description: 'At most 50 000 characters.' })
  @Directive(`@cost(weight: ${POST_BODY_COST})`)
  body!: string;

  @Field({ deprecationReason: 'Use `body`.', description: 'The body (old name).' })
  @Directive(`@cost(weight: ${POST_BODY_COST})`) // as large as Post.body
  content!: string;

  @Field(() => DateTimeScalar)
  createdAt!: string;

  @Field(() => DateTimeScalar)
  updatedAt!: string;
}

@ObjectType('PostConnection')
@Directive('@auth(scopes: ["posts:read"])')
@Directive('@cacheControl(inheritMaxAge: true)')
export class PostConnection extends Connection(PostModel, 'Post') {}
