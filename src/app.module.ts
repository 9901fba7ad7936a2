import { AuditModule } from './audit/audit.module.js';
import { Module, type DynamicModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AppGuard } from './app.guard.js';
import { AuthModule } from './auth/auth.module.js';
import { OAuthModule } from './auth/oauth/oauth.module.js';
import { CommonModule } from './http/http.module.js';
import type { AppConfig } from './config/config.js';
import { ConfigModule } from './config/config.module.js';
import { DatabaseModule } from './database/database.module.js';
import { DeprecationsModule } from './deprecations/deprecations.module.js';
import { EventsModule } from './events/events.module.js';
import { MessagesRepository } from './messages/messages.repository.js';
import { RoomsRepository } from './messages/rooms.repository.js';
import { UserEventsModule } from './users/user-events.module.js';
import { GraphqlApiModule } from './graphql/graphql-api.module.js';
import { HealthModule } from './health/health.module.js';
import { IdempotencyModule } from './idempotency/idempotency.module.js';
import { PostsModule } from './posts/posts.module.js';
import { SearchModule } from './search/search.module.js';
import { MessagesModule } from './messages/messages.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { OrdersModule } from './orders/orders.module.js';
import { RateLimitModule } from './rate-limit/rate-limit.module.js';
import { RedisModule } from './redis/redis.module.js';
import { UsersModule } from './users/users.module.js';
import { WebhookOutboxModule } from './outbox/webhook-outbox.module.js';
import { ChangesModule } from './change-subscribers/changes.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        CommonModule,
        DatabaseModule,
        AuditModule,
        RedisModule,
        WebhookOutboxModule,
        EventsModule.forRoot(RoomsRepository, MessagesRepository),
        ChangesModule,
        MetricsModule,
        IdempotencyModule,
        HealthModule,
        AuthModule,
        RateLimitModule,
        UsersModule,
        OrdersModule,
        MessagesModule,
        UserEventsModule,
        PostsModule,
        SearchModule,
        GraphqlApiModule,
        DeprecationsModule,
        OAuthModule,
        WebhooksModule.forRoot(config),
      ],
      // the one global guard: credentials, scopes, rate limit, query, list cost (app.guard.ts)
      providers: [AppGuard, { provide: APP_GUARD, useExisting: AppGuard }],
    };
  }
}
