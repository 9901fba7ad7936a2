import { Body, Controller, Get, Headers, HttpCode, Put, Res } from '@nestjs/common';
import { ApiBody, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { ApiDoc, ApiSingle, ApiStandardErrors } from '../common/openapi/decorators.js';
import { Authenticated, CurrentCaller, FIRST_PARTY_ONLY } from '../identity/auth.decorators.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { ifMatchHits, resourceEtag, withEtag } from '../http/etag.js';
import { TrustedDocumentsResponse, TrustedManifestBody } from './trusted-documents.response.js';
import { TrustedDocumentsService, type ManifestView } from './trusted-documents.service.js';

/** ADMINs with their own credentials: partner apps never read or replace the manifest. */
const ADMIN = { role: Role.ADMIN, scopes: FIRST_PARTY_ONLY } as const;

function toRest(view: ManifestView) {
  return { ...view.manifest, manifest_version: view.version, updated_at: view.updatedAt };
}

@ApiTags('graphql')
@Controller('graphql/trusted-documents')
export class TrustedDocumentsController {
  constructor(private readonly documents: TrustedDocumentsService) {}

  @Get()
  @Authenticated(ADMIN)
  @ApiDoc(
    'The GraphQL trusted documents manifest',
    'The operations first-party frontends may send (Apollo persisted query list format), with the version of the manifest and when it was last replaced (docs/graphql.md "Trusted documents"). ADMIN only; not available to partner apps.',
  )
  @ApiSingle(TrustedDocumentsResponse, { description: 'The manifest in force' })
  @ApiStandardErrors('authenticated')
  async get(@CurrentCaller() caller: Caller) {
    return { data: toRest(await this.documents.current(caller)) };
  }

  @Put()
  @HttpCode(200)
  @Authenticated(ADMIN)
  @ApiDoc(
    'Replace the GraphQL trusted documents manifest',
    'Replaces the whole manifest, on every instance (each one checks for a new version at most every 2 seconds). Every body must parse, hold one operation of its `type` and validate against the schema; ids must be unique. Audited as `graphql.trusted_documents_replaced`. ADMIN only; not available to partner apps.',
  )
  @ApiBody({ type: TrustedManifestBody })
  @ApiSingle(TrustedDocumentsResponse, { description: 'The new manifest, in force' })
  @ApiStandardErrors('authenticated-write', { precondition: true })
  async replace(
    @CurrentCaller() caller: Caller,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Headers('if-match') ifMatchHeader?: string,
  ) {
    // If-Match: the ETag GET sent for the manifest in force (412 when another replacement came first)
    const precondition = ifMatchHeader
      ? (current: ManifestView) => ifMatchHits(ifMatchHeader, resourceEtag(toRest(current)))
      : undefined;
    return withEtag(reply, toRest(await this.documents.replace(caller, body, precondition)));
  }
}
