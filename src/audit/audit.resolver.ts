import {
  Args,
  Context,
  Directive,
  Field,
  ID,
  InputType,
  Int,
  ObjectType,
  Query,
  Resolver,
} from '@nestjs/graphql';
import { BadRequest } from '../common/errors.js';
import { MAX_LIMIT } from '../common/list-query.js';
import { mapConnection, type ConnectionValue } from '../database/connection-value.js';
import { Connection } from '../graphql/connection.js';
import type { GqlContext } from '../graphql/context.js';
import { DateTimeScalar } from '../graphql/scalars/date-time.scalar.js';
import type { AuditEvent } from './audit-event.js';
import { AuditService } from './audit.service.js';

@ObjectType('AuditActor')
@Directive('@auth(scopes: ["users:read"])')
export class AuditActorModel {
  @Field({ description: '`user`, `api_key`, `oauth_client` or `system`.' })
  type!: string;

  @Field(() => String, { nullable: true, description: 'Null for `system`.' })
  id!: string | null;
}

@ObjectType('AuditTarget')
@Directive('@auth(scopes: ["users:read"])')
export class AuditTargetModel {
  @Field()
  type!: string;

  @Field()
  id!: string;
}

@ObjectType('AuditChange')
@Directive('@auth(scopes: ["users:read"])')
export class AuditChangeModel {
  @Field({ description: 'The REST member name.' })
  field!: string;

  @Field(() => String, { description: 'The old value as JSON text (`null` included).' })
  old!: string;

  @Field(() => String, { description: 'The new value as JSON text.' })
  new!: string;
}

/** An audit entry (docs/admin.md "Audit log"). */
@ObjectType('AuditEvent')
@Directive('@auth(scopes: ["users:read"])')
@Directive('@cacheControl(maxAge: 0, scope: PRIVATE)')
export class AuditEventModel {
  @Field(() => ID)
  id!: string;

  @Field(() => DateTimeScalar)
  at!: string;

  @Field(() => AuditActorModel)
  actor!: AuditActorModel;

  @Field(() => String, { nullable: true })
  onBehalfOf!: string | null;

  @Field()
  action!: string;

  @Field(() => AuditTargetModel)
  target!: AuditTargetModel;

  @Field(() => [AuditChangeModel])
  changes!: AuditChangeModel[];

  @Field(() => String, { nullable: true })
  requestId!: string | null;

  @Field(() => String, { nullable: true })
  ip!: string | null;
}

@ObjectType('AuditEventConnection')
@Directive('@auth(scopes: ["users:read"])')
@Directive('@cacheControl(maxAge: 0, scope: PRIVATE)')
class AuditEventConnection extends Connection(AuditEventModel, 'AuditEvent') {}

@InputType('AuditEventFilter')
export class AuditEventFilterInput {
  @Field(() => String, { nullable: true })
  actorId?: string | null;

  @Field(() => String, { nullable: true })
  targetId?: string | null;

  @Field(() => String, { nullable: true, description: 'An action such as `user.role_changed`.' })
  action?: string | null;

  @Field(() => DateTimeScalar, { nullable: true, description: 'Strictly later than (>).' })
  since?: string | null;

  @Field(() => DateTimeScalar, { nullable: true, description: 'At or before (<=).' })
  until?: string | null;
}

function toModel(e: AuditEvent): AuditEventModel {
  return {
    id: e.id,
    at: e.at,
    actor: e.actor,
    onBehalfOf: e.on_behalf_of,
    action: e.action,
    target: e.target,
    changes: Object.entries(e.changes).map(([field, [old, next]]) => ({
      field,
      old: JSON.stringify(old ?? null),
      new: JSON.stringify(next ?? null),
    })),
    requestId: e.request_id,
    ip: e.ip,
  };
}

@Resolver(() => AuditEventModel)
export class AuditResolver {
  constructor(private readonly audit: AuditService) {}

  @Query(() => AuditEventConnection, {
    nullable: true,
    description: 'The audit log, newest first (ADMIN only).',
  })
  @Directive('@auth(requires: ADMIN, scopes: ["users:read"])')
  async auditEvents(
    @Context() ctx: GqlContext,
    @Args('filter', { type: () => AuditEventFilterInput, nullable: true })
    filter?: AuditEventFilterInput | null,
    @Args('first', { type: () => Int, nullable: true, description: 'Default 20, at most 100.' })
    first?: number | null,
    @Args('after', { type: () => String, nullable: true }) after?: string | null,
  ): Promise<ConnectionValue<AuditEventModel>> {
    this.audit.requireAdmin(ctx.caller);
    if (first !== undefined && first !== null && (first < 0 || first > MAX_LIMIT)) {
      throw BadRequest('Invalid arguments', [
        { field: 'first', message: `first must be an integer from 0 to ${MAX_LIMIT}` },
      ]);
    }
    const page = await this.audit.page(
      ctx.caller,
      { window: { first, after }, sort: { field: 'at', desc: true } },
      {
        actorId: filter?.actorId ?? undefined,
        targetId: filter?.targetId ?? undefined,
        action: filter?.action ?? undefined,
        since: filter?.since ?? undefined,
        until: filter?.until ?? undefined,
      },
    );
    return mapConnection(page, toModel);
  }
}
