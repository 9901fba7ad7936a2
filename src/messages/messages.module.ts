import { Module } from '@nestjs/common';
import { MessagesService } from './messages.service.js';
import { RoomsController } from './rooms.controller.js';
import { RoomsService } from './rooms.service.js';

/** Rooms and messages (rooms live here: STYLE.md). */
@Module({
  controllers: [RoomsController],
  providers: [RoomsService, MessagesService],
  exports: [RoomsService, MessagesService],
})
export class MessagesModule {}
