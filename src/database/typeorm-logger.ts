import { Logger as NestLogger } from '@nestjs/common';
import type { Logger as TypeOrmLoggerInterface } from 'typeorm';

/** A statement slower than this is logged (warn), without its parameters. */
export const SLOW_QUERY_MS = 1000;

/** What a log line may say about a statement's parameters: how many, never their values. */
function describeParameters(parameters: unknown[] | undefined): string {
  return `${parameters?.length ?? 0} parameter(s) redacted`;
}

/**
 * TypeORM's logger, writing through the application's logger. Statements are not logged one by one
 * (`logQuery` is a no-op the tests hook to count statements); failed statements are logged at debug
 * (the caller decides what a failure means, e.g. a unique violation is a 409) and slow ones at warn.
 * Parameters are never written: an INSERT INTO users would carry an email and a password hash.
 */
export class TypeOrmLogger implements TypeOrmLoggerInterface {
  private readonly logger = new NestLogger('TypeORM');

  logQuery(): void {
    // statement-by-statement logging is off
  }

  logQueryError(error: string | Error, query: string, parameters?: unknown[]): void {
    this.logger.debug({
      msg: 'statement failed',
      error: typeof error === 'string' ? error : error.message,
      query,
      parameters: describeParameters(parameters),
    });
  }

  logQuerySlow(time: number, query: string, parameters?: unknown[]): void {
    this.logger.warn({
      msg: 'slow statement',
      duration_ms: time,
      query,
      parameters: describeParameters(parameters),
    });
  }

  logSchemaBuild(message: string): void {
    this.logger.debug(message);
  }

  logMigration(message: string): void {
    this.logger.log(message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') {
      this.logger.warn(String(message));
    } else {
      this.logger.debug(String(message));
    }
  }
}
