import { Controller, Get, Res, ServiceUnavailableException } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckService,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
  type HealthIndicatorFunction,
} from '@nestjs/terminus';
import type { FastifyReply } from 'fastify';
import type { Redis } from 'ioredis';
import { Public } from '../identity/auth.decorators.js';
import { ApiDoc, ApiMalformedRequest } from '../common/openapi/decorators.js';
import { ShutdownState } from '../http/shutdown.js';
import { firstConnection, RedisConnections } from '../redis/redis.module.js';

const PROBE_TIMEOUT_MS = 500;

@ApiTags('health')
@Controller('health')
@Public()
@ApiMalformedRequest()
export class HealthController {
  private redis: Redis | undefined;

  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly redisConnections: RedisConnections,
    private readonly shutdown: ShutdownState,
  ) {}

  /** The process is up and serving. */
  @Get('live')
  @HealthCheck()
  @ApiDoc('Liveness probe', 'The process is up and serving.')
  live() {
    return this.health.check([]);
  }

  /**
   * The database answers (and Redis, when configured); 503 with terminus' report otherwise, and 503
   * from the shutdown signal on (the instance is draining: take it out of rotation).
   */
  @Get('ready')
  @HealthCheck()
  @ApiDoc(
    'Readiness probe',
    'The database answers (and Redis, when configured); 503 with the report of what is down otherwise.',
  )
  async ready(@Res({ passthrough: true }) reply: FastifyReply) {
    if (this.shutdown.draining) {
      void reply.code(503);
      const down = { shutdown: { status: 'down', message: 'shutting down' } };
      return { status: 'error', info: {}, error: down, details: down };
    }
    try {
      return await this.health.check(this.readinessChecks());
    } catch (err) {
      if (err instanceof ServiceUnavailableException) {
        void reply.code(503);
        return err.getResponse();
      }
      throw err;
    }
  }

  private readinessChecks(): HealthIndicatorFunction[] {
    const checks: HealthIndicatorFunction[] = [
      () => this.db.pingCheck('database', { timeout: 1_000 }),
    ];
    if (this.redisConnections.enabled) {
      checks.push(() => this.pingRedis());
    }
    return checks;
  }

  /**
   * Down unless every Redis client of the application is connected AND a PING answers within
   * 500 ms: a client that is reconnecting (Redis stopped, a proxy in front of it gone) or a Redis
   * that accepts connections but does not answer are both down.
   */
  private async pingRedis() {
    const indicator = this.indicators.check('redis');
    this.redis ??= this.redisConnections.create('health', {
      commandTimeout: PROBE_TIMEOUT_MS,
      enableOfflineQueue: false,
    });
    // the first probe waits for the first connection (milliseconds when Redis is up)
    if (!(await firstConnection(this.redis, PROBE_TIMEOUT_MS))) {
      return indicator.down({ message: 'not connected (refused, or no answer within 500 ms)' });
    }
    const notReady = this.redisConnections.notReady();
    if (notReady.length > 0) {
      return indicator.down({ message: `not connected: ${notReady.join(', ')}` });
    }
    try {
      await this.redis.ping();
      return indicator.up();
    } catch (err) {
      return indicator.down({ message: (err as Error).message });
    }
  }
}
