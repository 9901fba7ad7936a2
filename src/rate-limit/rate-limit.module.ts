import { Global, Module, type ExecutionContext } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import type { FastifyRequest } from 'fastify';
import type { MaybeCaller } from '../auth/caller.js';
import { CredentialAttempts } from '../auth/credential-attempts.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { RedisConnections } from '../redis/redis.module.js';
import { CredentialBuckets } from './credential-buckets.js';
import { GraphqlRateLimitPlugin } from './graphql-rate-limit.plugin.js';
import { RateLimitGuard } from './rate-limit.guard.js';
import {
  BUCKET_AUTH,
  BUCKET_REQUESTS,
  CREDENTIAL_ROUTES,
  RateLimitService,
} from './rate-limit.service.js';
import { createRateLimitStore, RateLimitStore } from './rate-limit.store.js';
import { SocketLimitsService } from './socket-limits.service.js';
import { RateLimitThrottlerStorage } from './throttler-storage.adapter.js';

type TrackedRequest = { caller?: MaybeCaller; ip?: string };

function isCredentialRoute(context: ExecutionContext): boolean {
  const req = context.switchToHttp().getRequest<FastifyRequest>();
  return req.method === 'POST' && CREDENTIAL_ROUTES.has(req.routeOptions.url ?? '');
}

/** The counters and the rules on them; a module of its own so the throttler's options can use them. */
@Global()
@Module({
  providers: [
    { provide: RateLimitStore, useFactory: createRateLimitStore, inject: [RedisConnections] },
    RateLimitService,
    SocketLimitsService,
    // the credential door's failed-credential accounting (declared in auth/, kept here)
    { provide: CredentialAttempts, useClass: CredentialBuckets },
  ],
  exports: [RateLimitStore, RateLimitService, SocketLimitsService, CredentialAttempts],
})
export class RateLimitCoreModule {}

/**
 * Rate limits (docs/contract.md section 9, docs/rate-limits.md). Import AFTER AuthModule in AppModule:
 * global guards run in registration order and the throttler needs the caller the auth guard sets.
 */
@Module({
  imports: [
    RateLimitCoreModule,
    ThrottlerModule.forRootAsync({
      imports: [RateLimitCoreModule],
      inject: [APP_CONFIG, RateLimitService],
      useFactory: (config: AppConfig, limits: RateLimitService) => ({
        storage: new RateLimitThrottlerStorage(limits.store),
        generateKey: (_context: ExecutionContext, tracker: string, name: string) =>
          limits.key(name, tracker),
        throttlers: [
          {
            // requests per identity, on every REST route but the credential endpoints
            name: BUCKET_REQUESTS,
            limit: config.rateLimit,
            ttl: config.rateLimitWindowS * 1000,
            skipIf: isCredentialRoute,
            getTracker: (req: TrackedRequest) => limits.trackerOf(req.caller, req.ip),
          },
          {
            // the credential endpoints: per client address, stricter (failed checks elsewhere add to it)
            name: BUCKET_AUTH,
            limit: config.authRateLimit,
            ttl: config.authRateLimitWindowS * 1000,
            skipIf: (context: ExecutionContext) => !isCredentialRoute(context),
            getTracker: (req: TrackedRequest) => limits.ipTracker(req.ip),
          },
        ],
      }),
    }),
  ],
  providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }, GraphqlRateLimitPlugin],
})
export class RateLimitModule {}
