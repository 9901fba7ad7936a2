import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module.js';
import { MessagesResolver } from './messages.resolver.js';
import { RoomsResolver } from './rooms.resolver.js';
import { MessagesRepository } from './messages.repository.js';
import { MessagesService } from './messages.service.js';
import { RoomsController } from './rooms.controller.js';
import { RoomsService } from './rooms.service.js';

/** Rooms and messages (rooms live here: one folder per resource, CONTRIBUTING.md), REST and GraphQL. */
@Module({
  imports: [UsersModule],
  controllers: [RoomsController],
  providers: [RoomsService, MessagesService, MessagesRepository, RoomsResolver, MessagesResolver],
  exports: [RoomsService, MessagesService],
})
export class MessagesModule {}
