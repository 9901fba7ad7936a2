import { ApiProperty, ApiSchema } from '@nestjs/swagger';

@ApiSchema({ name: 'TrustedOperation' })
class TrustedOperationBody {
  @ApiProperty({
    example: 'a7f1c2…',
    description:
      'The id a client sends as `documentId` (generators use the SHA-256 of the body); unique in the manifest, at most 200 characters.',
  })
  id!: string;

  @ApiProperty({ example: 'PostTitles' })
  name!: string;

  @ApiProperty({ enum: ['query', 'mutation', 'subscription'] })
  type!: string;

  @ApiProperty({
    example: 'query PostTitles { posts(first: 10) { id title } }',
    description:
      'The GraphQL document: parses, holds one operation of `type`, valid against the schema.',
  })
  body!: string;
}

/** The members of a manifest besides its operations. */
class ManifestHead {
  @ApiProperty({ enum: ['apollo-persisted-query-manifest'] })
  format!: string;

  @ApiProperty({ enum: [1] })
  version!: number;
}

/** The manifest as sent (PUT): Apollo's persisted query list format. */
@ApiSchema({ name: 'TrustedDocumentsManifest' })
export class TrustedManifestBody extends ManifestHead {
  @ApiProperty({ type: [TrustedOperationBody], minItems: 1, maxItems: 5000 })
  operations!: TrustedOperationBody[];
}

/** The manifest in force, with its version (GET, and the answer of PUT). */
@ApiSchema({ name: 'TrustedDocuments' })
export class TrustedDocumentsResponse extends ManifestHead {
  @ApiProperty({
    type: [TrustedOperationBody],
    description: 'Empty until a manifest is loaded or PUT.',
  })
  operations!: TrustedOperationBody[];

  @ApiProperty({
    example: 3,
    description: 'Grows with every replacement (0: no manifest was ever loaded).',
  })
  manifest_version!: number;

  @ApiProperty({
    format: 'date-time',
    nullable: true,
    type: String,
    example: '2026-11-29T02:00:00.000Z',
    description: 'When the manifest was last replaced (null: never).',
  })
  updated_at!: string | null;
}
