import { ApiProperty } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsObject,
  IsOptional,
  IsString,
} from 'class-validator';
import { ValidatedPerItem } from '../../common/validation.js';

export const MAX_BATCH = 100;

export class BatchOperationInput {
  @IsIn(['create', 'update'], { message: 'op must be create or update' })
  op!: 'create' | 'update';

  @IsOptional()
  @IsString()
  id?: string;

  @IsObject()
  data!: Record<string, unknown>;
}

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
