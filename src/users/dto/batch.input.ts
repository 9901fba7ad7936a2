import { ApiProperty } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray } from 'class-validator';
import { ValidatedPerItem } from '../../common/validation.js';

export const MAX_BATCH = 100;

/** POST /users/batch: the operations are validated one by one by the service (with their index). */
@ValidatedPerItem()
export class BatchInput {
  @ApiProperty({
    description:
      'At most 100 operations: {op: "create", data} or {op: "update", id, data}; all or nothing',
    type: 'array',
    items: { type: 'object' },
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_BATCH)
  operations!: unknown[];
}
