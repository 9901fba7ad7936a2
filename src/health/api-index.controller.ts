import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { ApiBare, ApiDoc, ApiMalformedRequest } from '../common/openapi/decorators.js';
import { Public } from '../identity/auth.decorators.js';
import { ApiIndex } from './api-index.response.js';

/** The same answer for `/` and `/api/v1`: relative, so it holds behind any proxy or host name. */
const INDEX: ApiIndex = {
  name: 'Atrium',
  links: { docs: '/api/docs', openapi: '/api/docs-json', graphql: '/graphql', rest: '/api/v1' },
};

/**
 * Pointers for whoever opens the server's root or the REST base in a browser or with curl, instead
 * of a bare 404. Both paths are left out of the global prefix (app.factory.ts).
 */
@ApiTags('index')
@Controller()
@Public()
@ApiMalformedRequest()
export class ApiIndexController {
  @Get()
  @ApiDoc('Where to start', 'Links to the API documentation, the OpenAPI document and GraphQL.')
  @ApiBare(ApiIndex, 'Links to the documentation and the APIs')
  root(): ApiIndex {
    return INDEX;
  }

  @Get('api/v1')
  @ApiDoc('Where to start', 'Links to the API documentation, the OpenAPI document and GraphQL.')
  @ApiBare(ApiIndex, 'Links to the documentation and the APIs')
  restBase(): ApiIndex {
    return INDEX;
  }
}
