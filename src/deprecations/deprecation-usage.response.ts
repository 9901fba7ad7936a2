import { ApiProperty, ApiSchema } from '@nestjs/swagger';

@ApiSchema({ name: 'DeprecationClientUsage' })
class DeprecationClientUsageResponse {
  @ApiProperty({
    example: 'api_key:key_01JD5Z6K3M8Q2W4E6R8T0Y2U4I',
    description:
      '`oauth:<client_id>`, `api_key:<key id>`, `name:<apollographql-client-name>[@<version>]`, `first-party` or `anonymous`.',
  })
  client!: string;

  @ApiProperty({ example: 12, description: 'Operations that used the element since `since`.' })
  count!: number;

  @ApiProperty({ format: 'date-time', example: '2026-11-28T18:00:00.000Z' })
  last_used_at!: string;
}

/** One deprecated GraphQL element and who still uses it (`GET /api/v1/graphql/deprecations`). */
@ApiSchema({ name: 'DeprecationUsage' })
export class DeprecationUsageResponse {
  @ApiProperty({ example: 'Post.content', description: 'The schema coordinate.' })
  element!: string;

  @ApiProperty({ enum: ['field', 'argument', 'input_field', 'enum_value'] })
  kind!: string;

  @ApiProperty({ example: 'Use `body`.' })
  reason!: string;

  @ApiProperty({ type: [DeprecationClientUsageResponse] })
  clients!: DeprecationClientUsageResponse[];
}
