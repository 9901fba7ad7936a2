import {
  Global,
  Inject,
  Injectable,
  Logger,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { IdempotencyInterceptor } from './idempotency.interceptor.js';
import { IdempotencyRepository } from './idempotency.repository.js';

/** Deletes expired Idempotency-Key records (every hour, or every TTL when that is shorter). */
@Injectable()
class IdempotencySweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly repo: IdempotencyRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    const everyMs = Math.min(this.config.idempotencyTtlS, 3_600) * 1000;
    this.timer = setInterval(() => {
      this.repo.purgeExpired(new Date().toISOString()).catch((err: unknown) => {
        this.logger.warn({ err }, 'could not delete expired Idempotency-Key records');
      });
    }, everyMs);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}

@Global()
@Module({
  providers: [IdempotencyRepository, IdempotencyInterceptor, IdempotencySweeper],
  exports: [IdempotencyRepository, IdempotencyInterceptor],
})
export class IdempotencyModule {}
