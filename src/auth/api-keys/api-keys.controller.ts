import {
  Body,
  Controller,
  Delete,
  Get,
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
import { PublicUrl } from '../../common/public-url.js';
import { Authenticated, CurrentCaller, FIRST_PARTY_ONLY } from '../auth.decorators.js';
import type { Caller } from '../caller.js';
import { Role } from '../role.js';
import { CreateApiKeyInput } from './api-key.inputs.js';
import { ApiKeysService } from './api-keys.service.js';

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
  async get(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return { data: await this.keys.get(caller, id) };
  }

  @Delete(':id')
  @Authenticated({ role: Role.GUEST, scopes: FIRST_PARTY_ONLY })
  @HttpCode(204)
  async revoke(@CurrentCaller() caller: Caller, @Param('id') id: string): Promise<void> {
    await this.keys.revoke(caller, id);
  }
}
