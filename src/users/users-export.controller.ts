import { Controller, Get, Query, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Authenticated, CurrentCaller } from '../identity/auth.decorators.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { exportType, sendExport } from '../common/export-stream.js';
import { ApiDoc, ApiExport } from '../common/openapi/decorators.js';
import { EXPORT_COST } from '../rate-limit/list-cost.js';
import { UserResponse } from './dto/user.response.js';
import { toRestUser } from './users.mapper.js';
import { userFromRow } from './users.row.js';
import { USER_EXPORT_SPEC, UserSearchService } from './user-search.service.js';

const USER_EXPORT_COLUMNS = [
  'id',
  'name',
  'email',
  'role',
  'age',
  'created_at',
  'updated_at',
] as const;

/** GET /api/v1/users/export (docs/admin.md "Exports"). */
@ApiTags('users')
@Controller('users')
export class UsersExportController {
  constructor(private readonly users: UserSearchService) {}

  @Get('export')
  @Authenticated({ role: Role.ADMIN, scopes: ['users:read'] })
  @ApiDoc(
    'Export users (ADMIN)',
    'Every live user the list would show with the same `role` filter and sort, or the same search `q` (its matching rules, newest first), streamed as NDJSON (default) or CSV.',
  )
  @ApiExport(UserResponse, USER_EXPORT_SPEC, EXPORT_COST)
  async export(
    @CurrentCaller() caller: Caller,
    @Query() query: Record<string, unknown>,
    @Res() reply: FastifyReply,
  ) {
    // `Accept` is optional (NDJSON by default): read here, not declared as a required header
    const type = exportType(reply.request.headers.accept);
    const batches = await this.users.exportRows(caller, query);
    return sendExport(reply, type, 'users', USER_EXPORT_COLUMNS, batches, (row) =>
      toRestUser(userFromRow(row), caller),
    );
  }
}
