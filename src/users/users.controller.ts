import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  Param,
  Patch,
  Post,
  Put,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import { ApiExtraModels, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Authenticated, CurrentCaller } from '../identity/auth.decorators.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { ifMatchHits, resourceEtag, withEtag } from '../http/etag.js';
import { linkHeader } from '../common/list-query.js';
import { restPageOf } from '../database/connection-value.js';
import {
  ApiDoc,
  ApiList,
  ApiNoContent,
  ApiPage,
  ApiSingle,
  ApiStandardErrors,
} from '../common/openapi/decorators.js';
import { PublicUrl } from '../http/public-url.js';
import { BatchCreateOperation, BatchInput, BatchUpdateOperation } from './dto/batch.input.js';
import { CreateUserInput, PatchUserInput, ReplaceUserInput } from './dto/user.inputs.js';
import { BatchResultResponse, UserResponse } from './dto/user.response.js';
import type { User } from '../domain/user.js';
import { toRestUser } from './users.mapper.js';
import { USER_LIST_SPEC, UsersService } from './users.service.js';
import { UserAccountsService, type Precondition } from './user-accounts.service.js';
import { LAST_ADMIN_MESSAGE } from './admin-rules.service.js';
import { UserBatchService } from './user-batch.service.js';
import { Idempotent } from '../idempotency/idempotent.decorator.js';

/** `If-Match` as a precondition on the stored user, compared with the ETag GET would send. */
function ifMatch(header: string | undefined, caller: Caller): Precondition | undefined {
  return header
    ? (user: User) => ifMatchHits(header, resourceEtag(toRestUser(user, caller)))
    : undefined;
}

@ApiTags('users')
@Controller('users')
export class UsersController {
  constructor(
    private readonly users: UsersService,
    private readonly accounts: UserAccountsService,
    private readonly batches: UserBatchService,
    private readonly publicUrl: PublicUrl,
  ) {}

  @Get()
  @Authenticated({ role: Role.GUEST, scopes: ['users:read'] })
  @ApiDoc('List users', '`email` is null except on the caller’s own user (ADMINs see every email).')
  @ApiPage(UserResponse, USER_LIST_SPEC)
  @ApiStandardErrors('authenticated')
  async list(
    @CurrentCaller() caller: Caller,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const page = await restPageOf(await this.users.page(caller, { rest: query }));
    void reply.header('Link', linkHeader(this.publicUrl.base, req.url, page.meta, page.next));
    return { data: page.data.map((u) => toRestUser(u, caller)), meta: page.meta };
  }

  @Post()
  @Idempotent()
  @Authenticated({ role: Role.ADMIN, scopes: ['users:write'] })
  @ApiDoc('Create a user (ADMIN)')
  @ApiSingle(UserResponse, { status: 201, location: true })
  @ApiStandardErrors('authenticated-write', {
    conflict: 'A live user already has this email (case-insensitive).',
  })
  async create(
    @CurrentCaller() caller: Caller,
    @Body() input: CreateUserInput,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const user = await this.accounts.create(caller, input);
    void reply.code(201).header('Location', `${this.publicUrl.base}/api/v1/users/${user.id}`);
    return withEtag(reply, toRestUser(user, caller));
  }

  @Post('batch')
  @Idempotent()
  @Authenticated({ role: Role.USER, scopes: ['users:write'] })
  @HttpCode(200)
  @ApiExtraModels(BatchCreateOperation, BatchUpdateOperation)
  @ApiDoc(
    'Create and update users in one transaction',
    'At most 100 operations, all or nothing: the first failing operation fails the batch, and `details[].index` names it. The results come in the order of the operations.',
  )
  @ApiList(BatchResultResponse, 'One result per operation, in order')
  @ApiStandardErrors('authenticated-write', {
    conflict: `A live user already has this email (case-insensitive), or an \`update\` would demote the last ADMIN ("${LAST_ADMIN_MESSAGE}"); \`details[].index\` says which.`,
    notFound: 'An `update` names no such user (`details[].index` says which).',
    pathId: false,
  })
  async batch(@CurrentCaller() caller: Caller, @Body() input: BatchInput) {
    const results = await this.batches.batch(caller, input.operations);
    return {
      data: results.map((r) => ({ op: r.op, status: r.status, data: toRestUser(r.user, caller) })),
    };
  }

  @Get(':id')
  @Authenticated({ role: Role.GUEST, scopes: ['users:read'] })
  @ApiDoc('Get a user')
  @ApiSingle(UserResponse)
  @ApiStandardErrors('authenticated', { notFound: 'No such user' })
  async get(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return { data: toRestUser(await this.users.get(caller, id), caller) };
  }

  @Put(':id')
  @Authenticated({ role: Role.USER, scopes: ['users:write'] })
  @ApiDoc(
    'Replace a user',
    'Every member not sent returns to its default. Users change themselves; ADMINs change anyone and roles. `If-Match` makes it conditional.',
  )
  @ApiSingle(UserResponse)
  @ApiStandardErrors('authenticated-write', {
    notFound: 'No such user',
    conflict: `A live user already has this email (case-insensitive), or the change would demote the last ADMIN ("${LAST_ADMIN_MESSAGE}").`,
    precondition: true,
  })
  async replace(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Body() input: ReplaceUserInput,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Headers('if-match') ifMatchHeader?: string,
  ) {
    const user = await this.accounts.replace(caller, id, input, ifMatch(ifMatchHeader, caller));
    return withEtag(reply, toRestUser(user, caller));
  }

  @Patch(':id')
  @Authenticated({ role: Role.USER, scopes: ['users:write'] })
  @ApiDoc(
    'Update some members of a user',
    'A JSON merge patch (RFC 7396; `application/json` or `application/merge-patch+json`): `null` clears a nullable member. `If-Match` makes it conditional.',
  )
  @ApiSingle(UserResponse)
  @ApiStandardErrors('authenticated-write', {
    notFound: 'No such user',
    conflict: `A live user already has this email (case-insensitive), or the change would demote the last ADMIN ("${LAST_ADMIN_MESSAGE}").`,
    precondition: true,
  })
  async patch(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Body() input: PatchUserInput,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Headers('if-match') ifMatchHeader?: string,
  ) {
    const user = await this.accounts.update(caller, id, input, ifMatch(ifMatchHeader, caller));
    return withEtag(reply, toRestUser(user, caller));
  }

  @Delete(':id')
  @Authenticated({ role: Role.USER, scopes: ['users:write'] })
  @HttpCode(204)
  @ApiDoc(
    'Delete a user',
    'Users delete themselves; ADMINs delete anyone. `If-Match` makes it conditional.',
  )
  @ApiNoContent('Deleted')
  @ApiStandardErrors('authenticated', {
    notFound: 'No such user',
    conflict: `The user is the last ADMIN ("${LAST_ADMIN_MESSAGE}").`,
    precondition: true,
  })
  async remove(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Headers('if-match') ifMatchHeader?: string,
  ): Promise<void> {
    await this.accounts.remove(caller, id, ifMatch(ifMatchHeader, caller));
  }
}
