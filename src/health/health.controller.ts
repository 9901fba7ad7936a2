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
import { Public } from '../auth/auth.decorators.js';
import { RedisConnections } from '../redis/redis.module.js';

@ApiTags('health')
@Controller('health')
@Public()
export class HealthController {
  private redis: Redis | undefined;

  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly redisConnections: RedisConnections,
  ) {}

  /** The process is up and serving. */
  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([]);
  }

  /** The database answers (and Redis, when configured); 503 with terminus' report otherwise. */
  @Get('ready')
  @HealthCheck()
  async ready(@Res({ passthrough: true }) reply: FastifyReply) {
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

  private async pingRedis() {
    const indicator = this.indicators.check('redis');
    // queue the ping while (re)connecting, but never wait more than half a second
    this.redis ??= this.redisConnections.create('health', {
      commandTimeout: 500,
      enableOfflineQueue: true,
    });
    try {
      await this.redis.ping();
      return indicator.up();
    } catch (err) {
      return indicator.down({ message: (err as Error).message });
    }
  }
}
