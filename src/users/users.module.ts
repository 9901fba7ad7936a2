import { Module } from '@nestjs/common';
import { OAuthArtifactsRepository } from '../identity/oauth-artifacts.repository.js';
import { TypeOrmModule } from '@nestjs/typeorm';
import { UserEntity } from './user.entity.js';
import { UsersController } from './users.controller.js';
import { UsersExportController } from './users-export.controller.js';
import { UsersService } from './users.service.js';
import { UsersRepository } from './users.repository.js';
import { UserSearchService } from './user-search.service.js';
import { UserAccountsService } from './user-accounts.service.js';
import { UserBatchService } from './user-batch.service.js';
import { UserRecords } from './user-records.service.js';
import { AdminRulesService } from './admin-rules.service.js';
import { AdminBootstrap } from './admin-bootstrap.js';
import { AdminResolver } from './admin.resolver.js';
import { UsersResolver } from './users.resolver.js';

@Module({
  imports: [TypeOrmModule.forFeature([UserEntity])],
  controllers: [UsersExportController, UsersController],
  providers: [
    UsersService,
    UsersRepository,
    UserSearchService,
    UserAccountsService,
    UserBatchService,
    UserRecords,
    AdminRulesService,
    // the partner-app sign-ins a password change, demotion or deletion ends (owned by the OAuth module)
    OAuthArtifactsRepository,
    AdminBootstrap,
    UsersResolver,
    AdminResolver,
  ],
  exports: [UsersService, UserAccountsService, UsersRepository],
})
export class UsersModule {}
