import { Module } from '@nestjs/common';
import { UsersModule } from './users.module.js';
import { UserUpdatedResolver } from './user-updated.resolver.js';

/** The `userUpdated` subscription (EventsModule itself stays free of resource modules). */
@Module({
  imports: [UsersModule],
  providers: [UserUpdatedResolver],
})
export class UserEventsModule {}
