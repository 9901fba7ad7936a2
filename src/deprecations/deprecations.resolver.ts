import { Args, Context, Directive, Field, Int, ObjectType, Query, Resolver } from '@nestjs/graphql';
import type { GqlContext } from '../graphql/context.js';
import { DateTimeScalar } from '../graphql/scalars/date-time.scalar.js';
import { DeprecationUsageService, type DeprecationReport } from './deprecation-usage.service.js';

@ObjectType('DeprecationClientUsage')
@Directive('@auth(scopes: ["users:read"])')
@Directive('@cacheControl(maxAge: 0, scope: PRIVATE)')
class DeprecationClientUsageModel {
  @Field({
    description:
      '`oauth:<client_id>`, `api_key:<key id>`, `name:<apollographql-client-name>[@<version>]`, `first-party` or `anonymous`.',
  })
  client!: string;

  @Field(() => Int)
  count!: number;

  @Field(() => DateTimeScalar, { description: 'The last use.' })
  lastUsedAt!: string;
}

@ObjectType('DeprecationUsage')
@Directive('@auth(scopes: ["users:read"])')
@Directive('@cacheControl(maxAge: 0, scope: PRIVATE)')
class DeprecationUsageModel {
  @Field({ description: 'The schema coordinate, e.g. `Post.content`.' })
  element!: string;

  @Field({ description: '`field`, `argument`, `input_field` or `enum_value`.' })
  kind!: string;

  @Field()
  reason!: string;

  @Field(() => [DeprecationClientUsageModel])
  clients!: DeprecationClientUsageModel[];
}

function toModel(r: DeprecationReport): DeprecationUsageModel {
  return { element: r.coordinate, kind: r.kind, reason: r.reason, clients: r.clients };
}

@Resolver(() => DeprecationUsageModel)
export class DeprecationsResolver {
  constructor(private readonly usage: DeprecationUsageService) {}

  @Query(() => [DeprecationUsageModel], {
    nullable: true,
    description:
      'Each deprecated element of this schema with the clients that used it since `since` (default and earliest: 90 days ago). ADMIN only.',
  })
  @Directive('@auth(requires: ADMIN, scopes: ["users:read"])')
  async deprecationUsage(
    @Context() ctx: GqlContext,
    @Args('since', {
      type: () => DateTimeScalar,
      nullable: true,
      description: 'Count from its UTC day on.',
    })
    since?: string | null,
    @Args('first', {
      type: () => Int,
      nullable: true,
      description:
        'At most this many elements (default 20, at most 100): the query cost counts 20 clients for each.',
    })
    first?: number | null,
  ): Promise<DeprecationUsageModel[]> {
    return (await this.usage.report(ctx.caller, since, first)).map(toModel);
  }
}
