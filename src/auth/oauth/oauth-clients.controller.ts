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
  Query,
  Req,
  Res,
} from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { linkHeader } from '../../common/list-query.js';
import {
  ApiNoContent,
  ApiPage,
  ApiSingle,
  ApiStandardErrors,
} from '../../common/openapi/decorators.js';
import { ifMatchPrecondition, withEtag } from '../../http/etag.js';
import { PublicUrl } from '../../http/public-url.js';
import { Authenticated, CurrentCaller, FIRST_PARTY_ONLY } from '../../identity/auth.decorators.js';
import type { Caller } from '../../identity/caller.js';
import { Role } from '../../identity/role.js';
import { CreateOAuthClientInput, UpdateOAuthClientInput } from './oauth-client.inputs.js';
import { OAUTH_CLIENT_LIST_SPEC, OAuthClientsService } from './oauth-clients.service.js';
import { CreatedOAuthClientResponse, OAuthClientResponse } from './oauth.responses.js';

/** Partner apps (OAuth clients): registered by an ADMIN (docs/oauth.md). */
@ApiTags('oauth')
@Controller('oauth/clients')
export class OAuthClientsController {
  constructor(
    private readonly clients: OAuthClientsService,
    private readonly publicUrl: PublicUrl,
  ) {}

  @Post()
  @Authenticated({ role: Role.ADMIN, scopes: FIRST_PARTY_ONLY })
  @ApiOperation({
    summary: 'Register a partner app (ADMIN)',
    description:
      'Confidential clients (public: false) get `client_secret` in this response only; public clients get none.',
  })
  @ApiSingle(CreatedOAuthClientResponse, { status: 201, location: true })
  @ApiStandardErrors('authenticated-write')
  async create(
    @CurrentCaller() caller: Caller,
    @Body() input: CreateOAuthClientInput,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const client = await this.clients.create(caller, input);
    void reply
      .code(201)
      .header('Location', `${this.publicUrl.base}/api/v1/oauth/clients/${client.client_id}`)
      .header('Cache-Control', 'no-store');
    return { data: client };
  }

  @Get()
  @Authenticated({ role: Role.ADMIN, scopes: FIRST_PARTY_ONLY })
  @ApiOperation({ summary: 'List partner apps (ADMIN)' })
  @ApiPage(OAuthClientResponse, OAUTH_CLIENT_LIST_SPEC)
  @ApiStandardErrors('authenticated')
  async list(
    @CurrentCaller() caller: Caller,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const page = await this.clients.list(caller, query);
    void reply.header('Link', linkHeader(this.publicUrl.base, req.url, page.meta));
    return page;
  }

  @Get(':client_id')
  @Authenticated({ role: Role.ADMIN, scopes: FIRST_PARTY_ONLY })
  @ApiOperation({ summary: 'One partner app (ADMIN)' })
  @ApiSingle(OAuthClientResponse)
  @ApiStandardErrors('authenticated', { notFound: 'No such partner app' })
  async get(@CurrentCaller() caller: Caller, @Param('client_id') clientId: string) {
    return { data: await this.clients.get(caller, clientId) };
  }

  @Patch(':client_id')
  @Authenticated({ role: Role.ADMIN, scopes: FIRST_PARTY_ONLY })
  @ApiOperation({
    summary: 'Edit a partner app (ADMIN)',
    description:
      'Only the members sent change: `name`, `redirect_uris` and `scopes` replace the registered values; `logo_uri`, `client_uri`, `policy_uri`, `tos_uri` (https, shown on the consent page) are set, or removed with null. Scopes taken away end every refresh token, code and access token that carries one at once (the users\u2019 grants stay; the app asks again). `If-Match` makes it conditional.',
  })
  @ApiSingle(OAuthClientResponse)
  @ApiStandardErrors('authenticated-write', { notFound: 'No such partner app', precondition: true })
  async update(
    @CurrentCaller() caller: Caller,
    @Param('client_id') clientId: string,
    @Body() input: UpdateOAuthClientInput,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Headers('if-match') ifMatchHeader?: string,
  ) {
    const client = await this.clients.update(
      caller,
      clientId,
      input,
      ifMatchPrecondition(ifMatchHeader),
    );
    return withEtag(reply, client);
  }

  @Post(':client_id/secret')
  @Authenticated({ role: Role.ADMIN, scopes: FIRST_PARTY_ONLY })
  @HttpCode(200)
  @ApiOperation({
    summary: 'Rotate a partner app\u2019s secret (ADMIN)',
    description:
      'A new `client_secret`, shown in this response only. The previous secret keeps working for OAUTH_SECRET_OVERLAP_S seconds (default 86400) so the app can be redeployed; only the two latest secrets ever work.',
  })
  @ApiSingle(CreatedOAuthClientResponse)
  @ApiStandardErrors('authenticated', {
    notFound: 'No such partner app',
    conflict: 'A public client has no secret to rotate.',
  })
  async rotateSecret(
    @CurrentCaller() caller: Caller,
    @Param('client_id') clientId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    void reply.header('Cache-Control', 'no-store');
    return { data: await this.clients.rotateSecret(caller, clientId) };
  }

  @Delete(':client_id')
  @Authenticated({ role: Role.ADMIN, scopes: FIRST_PARTY_ONLY })
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete a partner app (ADMIN)',
    description:
      'Revokes every grant, code and token it holds; its access tokens stop working at once. `If-Match` makes it conditional.',
  })
  @ApiNoContent('Deleted')
  @ApiStandardErrors('authenticated', { notFound: 'No such partner app', precondition: true })
  async delete(
    @CurrentCaller() caller: Caller,
    @Param('client_id') clientId: string,
    @Headers('if-match') ifMatchHeader?: string,
  ): Promise<void> {
    await this.clients.delete(caller, clientId, ifMatchPrecondition(ifMatchHeader));
  }
}
