import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/** A room in REST bodies: the type `toRestRoom` returns and the schema `Room`. */
@ApiSchema({ name: 'Room' })
export class RoomResponse {
  @ApiProperty({ example: 'rom_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  id!: string;

  @ApiProperty({ example: 'general' })
  name!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  created_at!: string;
}

/** A message in REST bodies: the type `toRestMessage` returns and the schema `Message`. */
@ApiSchema({ name: 'Message' })
export class MessageResponse {
  @ApiProperty({ example: 'msg_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  id!: string;

  @ApiProperty({ example: 'rom_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  room_id!: string;

  @ApiProperty({ example: 'usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  author_id!: string;

  @ApiProperty({ example: 'Hello, room!' })
  content!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  created_at!: string;
}
