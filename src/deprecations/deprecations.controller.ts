import { Controller, Get, Query } from '@nestjs/common';
import { ApiQuery, ApiTags } from '@nestjs/swagger';
import { ApiDoc, ApiList, ApiStandardErrors } from '../common/openapi/decorators.js';
import { Authenticated, CurrentCaller } from '../identity/auth.decorators.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { DeprecationUsageResponse } from './deprecation-usage.response.js';
import { DeprecationUsageService } from './deprecation-usage.service.js';
import { toUsageResponse } from './deprecations.mapper.js';

@ApiTags('graphql')
@Controller('graphql/deprecations')
export class DeprecationsController {
  constructor(private readonly usage: DeprecationUsageService) {}

  @Get()
  @Authenticated({ role: Role.ADMIN, scopes: ['users:read'] })
  @ApiDoc(
    'Who still uses deprecated GraphQL elements',
    'Each deprecated field, argument, input field and enum value of the schema, with each client that used it (operations counted per day, kept 90 days), its count and last use (docs/changes.md). ADMIN only.',
  )
  @ApiQuery({
    name: 'since',
    required: false,
    description:
      'An RFC 3339 date-time: count from its UTC day on (default and earliest: 90 days ago).',
    schema: { type: 'string', format: 'date-time' },
  })
  @ApiList(DeprecationUsageResponse, 'The deprecated elements and their clients')
  @ApiStandardErrors('authenticated')
  async list(@CurrentCaller() caller: Caller, @Query('since') since?: string) {
    return { data: (await this.usage.report(caller, since)).map(toUsageResponse) };
  }
}
