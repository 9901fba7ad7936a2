import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { linkHeader } from '../../common/list-query.js';
import {
  ApiDoc,
  ApiNoContent,
  ApiPage,
  ApiSingle,
  ApiStandardErrors,
} from '../../common/openapi/decorators.js';
import { ifMatchPrecondition } from '../../http/etag.js';
import { PublicUrl } from '../../http/public-url.js';
import { Authenticated, CurrentCaller, FIRST_PARTY_ONLY } from '../../identity/auth.decorators.js';
import type { Caller } from '../../identity/caller.js';
import { Role } from '../../identity/role.js';
import { CreateApiKeyInput } from './api-key.inputs.js';
import { ApiKeyResponse, CreatedApiKeyResponse } from './api-key.response.js';
import { API_KEY_LIST_SPEC, ApiKeysService } from './api-keys.service.js';

@ApiTags('api-keys')
@Controller('api-keys')
export class ApiKeysController {
  constructor(
    private readonly keys: ApiKeysService,
    private readonly publicUrl: PublicUrl,
  ) {}

  /** The secret (`key`) is in this response only. */
  @Post()
  @Authenticated({ role: Role.GUEST, scopes: FIRST_PARTY_ONLY })
  @ApiDoc(
    'Create an API key',
    'The secret (`key`) is in this response only. Its role is at most the owner’s; a key made with an API key never exceeds that key (role, expiry).',
  )
  @ApiSingle(CreatedApiKeyResponse, { status: 201, location: true })
  @ApiStandardErrors('authenticated-write')
  async create(
    @CurrentCaller() caller: Caller,
    @Body() input: CreateApiKeyInput,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const key = await this.keys.create(caller, input);
    void reply.code(201).header('Location', `${this.publicUrl.base}/api/v1/api-keys/${key.id}`);
    return { data: key };
  }

  @Get()
  @Authenticated({ role: Role.GUEST, scopes: FIRST_PARTY_ONLY })
  @ApiDoc(
    'List API keys',
    'Your keys (ADMINs: every key); revoked keys stay listed with `revoked_at`.',
  )
  @ApiPage(ApiKeyResponse, API_KEY_LIST_SPEC)
  @ApiStandardErrors('authenticated')
  async list(
    @CurrentCaller() caller: Caller,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const page = await this.keys.list(caller, query);
    void reply.header('Link', linkHeader(this.publicUrl.base, req.url, page.meta));
    return page;
  }

  @Get(':id')
  @Authenticated({ role: Role.GUEST, scopes: FIRST_PARTY_ONLY })
  @ApiDoc('Get an API key')
  @ApiSingle(ApiKeyResponse)
  @ApiStandardErrors('authenticated', { notFound: 'No such key (or not visible to the caller)' })
  async get(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return { data: await this.keys.get(caller, id) };
  }

  @Delete(':id')
  @Authenticated({ role: Role.GUEST, scopes: FIRST_PARTY_ONLY })
  @HttpCode(204)
  @ApiDoc(
    'Revoke an API key',
    'It stops working at once; it stays listed with `revoked_at`. `If-Match` makes it conditional (the ETag covers `last_used_at`).',
  )
  @ApiNoContent('Revoked')
  @ApiStandardErrors('authenticated', {
    notFound: 'No such key (or not visible to the caller)',
    precondition: true,
  })
  async revoke(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Headers('if-match') ifMatchHeader?: string,
  ): Promise<void> {
    await this.keys.revoke(caller, id, ifMatchPrecondition(ifMatchHeader));
  }
}
