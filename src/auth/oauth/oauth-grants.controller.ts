import { Controller, Delete, Get, HttpCode, Param } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Authenticated, CurrentCaller, FIRST_PARTY_ONLY } from '../../identity/auth.decorators.js';
import { ApiList, ApiNoContent, ApiStandardErrors } from '../../common/openapi/decorators.js';
import type { Caller } from '../../identity/caller.js';
import { Role } from '../../identity/role.js';
import { OAuthGrantsService } from './oauth-grants.service.js';
import { AuthorizedAppResponse } from './oauth.responses.js';

/** The partner apps the calling user has authorized (docs/oauth.md). */
@ApiTags('oauth')
@Controller('oauth/grants')
export class OAuthGrantsController {
  constructor(private readonly grants: OAuthGrantsService) {}

  @Get()
  @Authenticated({ role: Role.GUEST, scopes: FIRST_PARTY_ONLY })
  @ApiOperation({
    summary: 'The apps you authorized',
    description: 'One entry per app: its client_id, name, the scopes you granted and when.',
  })
  @ApiList(AuthorizedAppResponse, 'The apps you authorized')
  @ApiStandardErrors('authenticated')
  async list(@CurrentCaller() caller: Caller) {
    return { data: await this.grants.list(caller) };
  }

  @Delete(':client_id')
  @Authenticated({ role: Role.GUEST, scopes: FIRST_PARTY_ONLY })
  @HttpCode(204)
  @ApiOperation({
    summary: 'Revoke an app',
    description:
      'Removes your grant to this app with its refresh tokens; its access tokens stop working at once.',
  })
  @ApiNoContent('Revoked')
  @ApiStandardErrors('authenticated', { notFound: 'You have not authorized this app' })
  async revoke(
    @CurrentCaller() caller: Caller,
    @Param('client_id') clientId: string,
  ): Promise<void> {
    await this.grants.revoke(caller, clientId);
  }
}
