import { Module } from '@nestjs/common';
import { PostsModule } from '../posts/posts.module.js';
import { UsersModule } from '../users/users.module.js';
import { SearchResolver } from './search.resolver.js';

@Module({ imports: [UsersModule, PostsModule], providers: [SearchResolver] })
export class SearchModule {}
