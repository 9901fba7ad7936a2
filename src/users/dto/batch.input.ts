import { ApiProperty, ApiSchema, getSchemaPath } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray } from 'class-validator';
import { ValidatedPerItem } from '../../common/validation.js';
import { CreateUserInput, PatchUserInput } from './user.inputs.js';

export const MAX_BATCH = 100;

/**
 * The two shapes of a batch operation, for the OpenAPI document only: the service checks each
 * operation itself (src/users/users.service.ts), with its index in `details`.
 */
@ApiSchema({ name: 'BatchCreateOperation', description: 'Creates a user, as POST /users does.' })
export class BatchCreateOperation {
  @ApiProperty({ enum: ['create'] })
  op!: 'create';

  @ApiProperty({ type: () => CreateUserInput })
  data!: CreateUserInput;
}

@ApiSchema({
  name: 'BatchUpdateOperation',
  description: 'Updates some members of a user, as PATCH /users/{id} does.',
})
export class BatchUpdateOperation {
  @ApiProperty({ enum: ['update'] })
  op!: 'update';

  @ApiProperty({ example: 'usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  id!: string;

  @ApiProperty({ type: () => PatchUserInput })
  data!: PatchUserInput;
}

/** POST /users/batch: the operations are validated one by one by the service (with their index). */
@ValidatedPerItem()
export class BatchInput {
  @ApiProperty({
    description: 'At most 100 operations, run in order; all or nothing',
    type: 'array',
    minItems: 1,
    maxItems: MAX_BATCH,
    items: {
      oneOf: [
        { $ref: getSchemaPath(BatchCreateOperation) },
        { $ref: getSchemaPath(BatchUpdateOperation) },
      ],
    },
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_BATCH)
  operations!: unknown[];
}
