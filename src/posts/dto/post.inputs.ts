import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Field, InputType } from '@nestjs/graphql';
import { Transform } from 'class-transformer';
import { IsString, Length, MaxLength, ValidateIf } from 'class-validator';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

const MAX_BODY = 50_000;

/** POST /posts and createPost: one class for REST and GraphQL (CONTRIBUTING.md, house style 4). */
@InputType('CreatePostInput')
export class CreatePostInput {
  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Release notes' })
  @Field({ description: '1-200 characters, trimmed.' })
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  title!: string;

  @ApiProperty({ maxLength: MAX_BODY, example: 'What changed this week.' })
  @Field({ description: 'At most 50 000 characters (may be empty).' })
  @IsString()
  @MaxLength(MAX_BODY)
  body!: string;
}

/** PUT body: every member replaced, so the same members and rules as create. */
export class ReplacePostInput extends CreatePostInput {}

/** PATCH body (JSON merge patch) and updatePost's input: only supplied members change. */
@InputType('UpdatePostInput')
export class PatchPostInput {
  @ApiPropertyOptional({ minLength: 1, maxLength: 200 })
  @Field(() => String, { nullable: true })
  @ValidateIf((o: PatchPostInput) => o.title !== undefined)
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  title?: string;

  @ApiPropertyOptional({ maxLength: MAX_BODY })
  @Field(() => String, { nullable: true })
  @ValidateIf((o: PatchPostInput) => o.body !== undefined)
  @IsString()
  @MaxLength(MAX_BODY)
  body?: string;
}
