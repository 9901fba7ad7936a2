import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module.js';
import { PostsController } from './posts.controller.js';
import { PostsResolver } from './posts.resolver.js';
import { PostsRepository } from './posts.repository.js';
import { PostsService } from './posts.service.js';
import { UserPostsResolver } from './user-posts.resolver.js';

@Module({
  imports: [UsersModule],
  controllers: [PostsController],
  providers: [PostsService, PostsRepository, PostsResolver, UserPostsResolver],
  exports: [PostsService],
})
export class PostsModule {}
