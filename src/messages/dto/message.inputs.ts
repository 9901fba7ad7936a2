import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsString, Length, Matches } from 'class-validator';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

/** `POST /rooms` and `createRoom`: a unique name of 1–100 characters (trimmed). */
export class CreateRoomInput {
  @ApiProperty({ minLength: 1, maxLength: 100, example: 'general' })
  @Transform(trim)
  @IsString()
  @Length(1, 100)
  name!: string;
}

/** `POST /rooms/{id}/messages` and `sendMessage`: 1–4000 characters, not only whitespace. */
export class SendMessageInput {
  @ApiProperty({ minLength: 1, maxLength: 4000, example: 'Hello, room' })
  @IsString()
  @Length(1, 4000)
  @Matches(/\S/, { message: 'content must not be blank' })
  content!: string;
}
