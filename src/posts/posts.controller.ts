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
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Authenticated, CurrentCaller } from '../identity/auth.decorators.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { ifMatchHits, resourceEtag, withEtag } from '../http/etag.js';
import { linkHeader } from '../common/list-query.js';
import { PublicUrl } from '../http/public-url.js';
import {
  ApiDoc,
  ApiNoContent,
  ApiPage,
  ApiSingle,
  ApiStandardErrors,
} from '../common/openapi/decorators.js';

import { CreatePostInput, PatchPostInput, ReplacePostInput } from './dto/post.inputs.js';
import { PostResponse } from './dto/post.response.js';
import type { Post as PostValue } from '../domain/post.js';
import { toRestPost } from './posts.mapper.js';
import { POST_LIST_SPEC, PostsService, type PostPrecondition } from './posts.service.js';
import { Idempotent } from '../idempotency/idempotent.decorator.js';

/** `If-Match` as a precondition on the stored post, compared with the ETag GET would send. */
function ifMatch(header: string | undefined): PostPrecondition | undefined {
  return header
    ? (post: PostValue) => ifMatchHits(header, resourceEtag(toRestPost(post)))
    : undefined;
}

/** REST side of the posts resource: the same list, ETag, error and permission rules as users. */
@ApiTags('posts')
@Controller('posts')
export class PostsController {
  constructor(
    private readonly posts: PostsService,
    private readonly publicUrl: PublicUrl,
  ) {}

  @Get()
  @Authenticated({ role: Role.GUEST, scopes: ['posts:read'] })
  @ApiDoc('List posts')
  @ApiPage(PostResponse, POST_LIST_SPEC)
  @ApiStandardErrors('authenticated')
  async list(
    @CurrentCaller() caller: Caller,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const page = await this.posts.list(caller, query);
    void reply.header('Link', linkHeader(this.publicUrl.base, req.url, page.meta, page.next));
    return { data: page.data.map(toRestPost), meta: page.meta };
  }

  @Post()
  @Idempotent()
  @Authenticated({ role: Role.USER, scopes: ['posts:write'] })
  @ApiDoc('Write a post (USER or ADMIN)', 'The caller is its author.')
  @ApiSingle(PostResponse, { status: 201, location: true })
  @ApiStandardErrors('authenticated-write')
  async create(
    @CurrentCaller() caller: Caller,
    @Body() input: CreatePostInput,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const post = await this.posts.create(caller, input);
    void reply.code(201).header('Location', `${this.publicUrl.base}/api/v1/posts/${post.id}`);
    return withEtag(reply, toRestPost(post));
  }

  @Get(':id')
  @Authenticated({ role: Role.GUEST, scopes: ['posts:read'] })
  @ApiDoc('Get a post')
  @ApiSingle(PostResponse)
  @ApiStandardErrors('authenticated', { notFound: 'No such post' })
  async get(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return { data: toRestPost(await this.posts.get(caller, id)) };
  }

  @Put(':id')
  @Authenticated({ role: Role.USER, scopes: ['posts:write'] })
  @ApiDoc(
    'Replace a post',
    'Authors change their posts; ADMINs any post. `If-Match` makes it conditional.',
  )
  @ApiSingle(PostResponse)
  @ApiStandardErrors('authenticated-write', { notFound: 'No such post', precondition: true })
  async replace(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Body() input: ReplacePostInput,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Headers('if-match') ifMatchHeader?: string,
  ) {
    return withEtag(
      reply,
      toRestPost(await this.posts.replace(caller, id, input, ifMatch(ifMatchHeader))),
    );
  }

  @Patch(':id')
  @Authenticated({ role: Role.USER, scopes: ['posts:write'] })
  @ApiDoc(
    'Update some members of a post',
    'A JSON merge patch (RFC 7396). Authors change their posts; ADMINs any post. `If-Match` makes it conditional.',
  )
  @ApiSingle(PostResponse)
  @ApiStandardErrors('authenticated-write', { notFound: 'No such post', precondition: true })
  async patch(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Body() input: PatchPostInput,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Headers('if-match') ifMatchHeader?: string,
  ) {
    return withEtag(
      reply,
      toRestPost(await this.posts.update(caller, id, input, ifMatch(ifMatchHeader))),
    );
  }

  @Delete(':id')
  @Authenticated({ role: Role.USER, scopes: ['posts:write'] })
  @HttpCode(204)
  @ApiDoc(
    'Delete a post',
    'Authors delete their posts; ADMINs any post. `If-Match` makes it conditional.',
  )
  @ApiNoContent('Deleted')
  @ApiStandardErrors('authenticated', { notFound: 'No such post', precondition: true })
  async remove(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Headers('if-match') ifMatchHeader?: string,
  ): Promise<void> {
    await this.posts.remove(caller, id, ifMatch(ifMatchHeader));
  }
}
