import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/** Where a newcomer goes next: the relative URLs of the documentation and the two APIs. */
@ApiSchema({ name: 'ApiIndexLinks' })
export class ApiIndexLinks {
  @ApiProperty({ example: '/api/docs', description: 'Swagger UI: the REST API, browsable.' })
  docs!: string;

  @ApiProperty({ example: '/api/docs-json', description: 'The OpenAPI 3 document (JSON).' })
  openapi!: string;

  @ApiProperty({
    example: '/graphql',
    description: 'The GraphQL endpoint (POST or GET; GraphiQL in a browser in development).',
  })
  graphql!: string;

  @ApiProperty({ example: '/api/v1', description: 'The base of every REST route.' })
  rest!: string;
}

/** `GET /` and `GET /api/v1` (not wrapped in `{data}`: it describes the API, not a resource). */
@ApiSchema({ name: 'ApiIndex' })
export class ApiIndex {
  @ApiProperty({ example: 'Atrium' })
  name!: string;

  @ApiProperty({ type: ApiIndexLinks })
  links!: ApiIndexLinks;
}
