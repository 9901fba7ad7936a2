import { DomainError } from '../common/errors.js';

/** Seconds a client should wait before retrying when the database connection was lost. */
export const DB_RETRY_AFTER_S = 1;

/**
 * Driver error codes meaning "the connection to the database is gone or unusable", not "this
 * statement is wrong": PostgreSQL class 08 (connection exception), 57P01-57P03 (the server
 * terminated the backend or is shutting down / starting), 53300 (too many connections), the
 * socket's errno, and SQLite's busy database (the lock wait ran out).
 */
const UNAVAILABLE_CODES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '53300',
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'SQLITE_BUSY',
]);

/** node-postgres reports a lost socket, and a statement unanswered within query_timeout, by message only. */
const UNAVAILABLE_MESSAGES =
  /Connection terminated|Query read timeout|Client has encountered a connection error|not queryable|timeout exceeded when trying to connect|Client was closed|connection is closed/i;

/**
 * TypeORM's own errors when a transaction's connection died under it (TypeORM releases the runner of
 * a client that emitted an error; the transaction's next statement then fails with these).
 */
const UNAVAILABLE_TYPEORM_ERRORS = new Set([
  'QueryRunnerAlreadyReleasedError',
  'QueryRunnerProviderAlreadyReleasedError',
]);

/** PostgreSQL codes for text it cannot store (NUL, invalid encoding) or that is too long. */
const BAD_TEXT_CODES = new Set(['22021', '22P05', '22001']);

interface DriverErrorLike {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  driverError?: DriverErrorLike;
  cause?: DriverErrorLike;
}

function chain(err: DriverErrorLike): DriverErrorLike[] {
  const out: DriverErrorLike[] = [];
  let current: DriverErrorLike | undefined = err;
  while (current && typeof current === 'object' && out.length < 5) {
    out.push(current);
    current = current.driverError ?? current.cause;
  }
  return out;
}

/**
 * A database error as the domain error the client should see, or undefined when it is a genuine
 * server fault (500). Connection loss -> 503 `service_unavailable` (with Retry-After); text the
 * database cannot store -> 422 (the validation layer refuses such input first; this is the net).
 */
export function domainErrorOfDatabase(exception: unknown): DomainError | undefined {
  if (!exception || typeof exception !== 'object') {
    return undefined;
  }
  const errors = chain(exception);
  for (const e of errors) {
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (
      (code && UNAVAILABLE_CODES.has(code)) ||
      (typeof e.name === 'string' && UNAVAILABLE_TYPEORM_ERRORS.has(e.name))
    ) {
      return unavailable();
    }
    if (code && BAD_TEXT_CODES.has(code)) {
      return new DomainError('validation_failed', 'Validation failed', [
        { message: 'a text value cannot be stored (invalid characters or too long)' },
      ]);
    }
  }
  if (errors.some((e) => typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message))) {
    return unavailable();
  }
  return undefined;
}

function unavailable(): DomainError {
  return new DomainError(
    'service_unavailable',
    'The database is temporarily unavailable; retry shortly',
  );
}
