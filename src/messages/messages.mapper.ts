import type { MessageResponse, RoomResponse } from './dto/message.response.js';
import type { Message, Room } from '../domain/message.js';

export function toRestRoom(room: Room): RoomResponse {
  return { id: room.id, name: room.name, created_at: room.createdAt };
}

export function toRestMessage(message: Message): MessageResponse {
  return {
    id: message.id,
    room_id: message.roomId,
    author_id: message.authorId,
    content: message.content,
    created_at: message.createdAt,
  };
}
