import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Authenticated, CurrentCaller } from '../identity/auth.decorators.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { linkHeader } from '../common/list-query.js';
import { restPageOf } from '../database/connection-value.js';
import { ApiDoc, ApiPage, ApiStandardErrors } from '../common/openapi/decorators.js';
import { PublicUrl } from '../http/public-url.js';
import { AuditEventResponse } from './audit-event.response.js';
import { AUDIT_LIST_SPEC, AuditService } from './audit.service.js';

@ApiTags('audit')
@Controller('audit-events')
export class AuditController {
  constructor(
    private readonly audit: AuditService,
    private readonly publicUrl: PublicUrl,
  ) {}

  @Get()
  @Authenticated({ role: Role.ADMIN, scopes: ['users:read'] })
  @ApiDoc(
    'List audit entries (ADMIN)',
    'Newest first. `since` is strictly later, `until` up to and including. Entries are append-only: no route changes or deletes one.',
  )
  @ApiPage(AuditEventResponse, AUDIT_LIST_SPEC)
  @ApiStandardErrors('authenticated')
  async list(
    @CurrentCaller() caller: Caller,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const page = await restPageOf(await this.audit.page(caller, { rest: query }));
    void reply.header('Link', linkHeader(this.publicUrl.base, req.url, page.meta, page.next));
    return { data: page.data, meta: page.meta };
  }
}
