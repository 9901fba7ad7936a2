import { Global, Module } from '@nestjs/common';
import { CredentialAttempts } from '../identity/credential-attempts.js';
import { RedisConnections } from '../redis/redis.module.js';
import { CredentialBuckets } from './credential-buckets.js';
import { GraphqlRateLimitPlugin } from './graphql-rate-limit.plugin.js';
import { RateLimitService } from './rate-limit.service.js';
import { RequestLimit } from './request-limit.js';
import { createRateLimitStore, RateLimitStore } from './rate-limit.store.js';
import { SocketLimitsService } from './socket-limits.service.js';

/** The counters and the rules on them; global: the credential door and the OAuth routes count too. */
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
class RateLimitCoreModule {}

/**
 * Rate limits (docs/contract.md section 9, docs/rate-limits.md): the REST request buckets (counted
 * by the request guard, src/app.guard.ts) and GraphQL's per-operation counting.
 */
@Module({
  imports: [RateLimitCoreModule],
  providers: [RequestLimit, GraphqlRateLimitPlugin],
  exports: [RequestLimit],
})
export class RateLimitModule {}
