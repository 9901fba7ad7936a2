import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/** A post in REST bodies (snake_case): the type `toRestPost` returns and the schema `Post`. */
@ApiSchema({ name: 'Post' })
export class PostResponse {
  @ApiProperty({ example: 'pst_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  id!: string;

  @ApiProperty({ example: 'usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  author_id!: string;

  @ApiProperty({ example: 'Release notes' })
  title!: string;

  @ApiProperty({ example: 'What changed this week.' })
  body!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  created_at!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  updated_at!: string;
}
