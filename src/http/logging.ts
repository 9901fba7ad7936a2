import type { LoggerService } from '@nestjs/common';
import {
  LogController,
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { pino, type ChildLoggerOptions, type DestinationStream, type Logger } from 'pino';
import type { AppConfig } from '../config/config.js';
import { traceLogFields, tracingEnabled } from '../telemetry/tracing.js';

const API_KEY_PARAM = /api_key=/i;

/** The URL as logged: an `api_key` in the query is a credential and never reaches the logs. */
export function redactUrl(url: string | undefined): string | undefined {
  if (url === undefined || !API_KEY_PARAM.test(url)) {
    return url;
  }
  return url.replace(/([?&]api_key=)[^&]*/gi, '$1[redacted]');
}

/**
 * Members of a (database) error whose values are data, not diagnosis: TypeORM's `parameters` (an
 * INSERT's would carry an email and a password hash), PostgreSQL's `detail` ("Key (email)=(…)",
 * "Failing row contains (…)") and `where` (context lines with values). They never reach a log.
 */
const DATA_BEARING_ERROR_KEYS = new Set(['parameters', 'detail', 'where']);
const REDACTED = '[redacted]';

/** Replaces data-bearing members anywhere in a serialized error (nested driver errors, causes). */
function redactErrorData(value: unknown, depth = 0): unknown {
  if (depth > 5 || value === null || typeof value !== 'object') {
    return value;
  }
  if (Array.isArray(value)) {
    return value.map((v) => redactErrorData(v, depth + 1));
  }
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value as Record<string, unknown>)) {
    out[key] =
      DATA_BEARING_ERROR_KEYS.has(key) && member !== undefined
        ? REDACTED
        : redactErrorData(member, depth + 1);
  }
  return out;
}

/** pino's error serializer, then {@link redactErrorData}. */
function serializeError(err: unknown): unknown {
  if (!(err instanceof Error)) {
    return redactErrorData(err);
  }
  return redactErrorData(pino.stdSerializers.err(err));
}

/**
 * The one pino logger of the process, also Fastify's (`loggerInstance`): Fastify gives every request
 * a child logger carrying its `request_id`. Headers and bodies are never serialized, so
 * Authorization, X-API-Key, cookies and passwords cannot leak; `redact` guards the usual paths in
 * case a line logs an object that holds them.
 *
 * Why not nestjs-pino: on the Fastify adapter it runs as Nest middleware (middie) plus pino-http per
 * request, which measured ~95 µs of CPU per request here, more than the whole bare Fastify handler
 * (docs/performance.md). Fastify's own request logger does the same job for a few µs.
 */
export function createRootLogger(config: AppConfig, destination?: DestinationStream): Logger {
  return pino(
    {
      level: config.logLevel,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-api-key"]',
          'req.headers.cookie',
          '*.password',
          '*.access_token',
          '*.refresh_token',
        ],
        censor: '[redacted]',
      },
      // database errors carry their statement's parameters: serialized without them
      serializers: { err: serializeError },
      // with tracing on, a line written inside a trace names it (docs/operations.md, "Traces")
      mixin: tracingEnabled() ? () => traceLogFields() ?? {} : undefined,
      // buffered, asynchronous writes: a synchronous write per line cost ~50 µs per request
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Bindings = Record<string, unknown>;

/** A plain object (not an Error, array or class instance): safe to merge with bindings. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') {
    return false;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * `request.log`: the request's child logger (its `request_id` binding), made only when something
 * needs one. Fastify makes a pino child per request, and pino serializes and redacts the bindings of
 * each (~3 % of a REST GET's CPU, docs/performance.md), whether a line is written or not. Here a
 * line whose first argument is a plain object (the request line, `{ err }` lines) goes to the parent
 * with the bindings merged in front: pino writes the same JSON a child would (bindings, then the
 * object's members). Anything else (a message first, an Error first, `child()`, a level change)
 * makes the real child once and uses it from then on.
 */
export class LazyRequestLogger {
  private real: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindingsOf: Bindings,
  ) {}

  private materialize(): Logger {
    return (this.real ??= this.parent.child(this.bindingsOf));
  }

  private write(level: LogLevel, args: unknown[]): void {
    if (this.real) {
      Reflect.apply(this.real[level], this.real, args);
      return;
    }
    if (!this.parent.isLevelEnabled(level)) {
      return;
    }
    const [first, ...rest] = args;
    if (isPlainObject(first)) {
      Reflect.apply(this.parent[level], this.parent, [{ ...this.bindingsOf, ...first }, ...rest]);
      return;
    }
    const child = this.materialize();
    Reflect.apply(child[level], child, args);
  }

  get level(): string {
    return (this.real ?? this.parent).level;
  }
  set level(level: string) {
    this.materialize().level = level;
  }
  get levels(): Logger['levels'] {
    return (this.real ?? this.parent).levels;
  }
  isLevelEnabled(level: string): boolean {
    return (this.real ?? this.parent).isLevelEnabled(level);
  }
  bindings(): Bindings {
    return this.materialize().bindings();
  }
  setBindings(bindings: Bindings): void {
    this.materialize().setBindings(bindings);
  }
  flush(cb?: (err?: Error) => void): void {
    this.parent.flush(cb);
  }
  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.materialize().child(bindings, options);
  }
}

/**
 * Fastify's `childLoggerFactory`: a {@link LazyRequestLogger} per request, or pino's own child when
 * the route sets a log level or serializers of its own.
 */
export function requestChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined || options.serializers !== undefined) {
    return logger.child(bindings, options);
  }
  return new LazyRequestLogger(logger as Logger, bindings);
}

const PEER = Symbol('peer');

/** Longest GraphQL operation name written to a log line (names are client-chosen). */
const MAX_LOGGED_NAME = 100;

/**
 * What the request line says about a request beyond method, URL and status: its caller (set by the
 * request guard for REST, by the GraphQL context factory for /graphql) and, for GraphQL, the operation.
 */
/** The parts of a caller (src/identity/caller.ts) a log line names: ids and the kind of credential. */
interface LoggedCaller {
  userId: string;
  keyId?: string;
  clientId?: string;
  method: string;
}

interface LoggedRequest {
  caller?: LoggedCaller;
  [PEER]?: string;
  operationName?: string;
  operationType?: string;
}

/** Notes the GraphQL operation a request ran, for its log line. */
export function noteOperation(request: FastifyRequest, name: string, type: string): void {
  const logged = request as FastifyRequest & LoggedRequest;
  logged.operationName = name.length > MAX_LOGGED_NAME ? name.slice(0, MAX_LOGGED_NAME) : name;
  logged.operationType = type;
}

/**
 * Who called, as log fields: the user, the API key's id, the OAuth client's id, and the kind of
 * credential. Ids only: never a secret, a token or a key.
 */
export interface CallerFields {
  user_id?: string;
  key_id?: string;
  client_id?: string;
  auth?: string;
}

export function callerFields(caller: LoggedCaller | undefined): CallerFields {
  return caller
    ? {
        user_id: caller.userId,
        key_id: caller.keyId,
        client_id: caller.clientId,
        auth: caller.method,
      }
    : {};
}

/** One line per request, when it completes (Fastify's default also logs a line when it starts). */
export class RequestLogController extends LogController {
  /** The completion line carries everything; only the peer address is noted now (by the time the
   * response is written a closed socket no longer knows it). */
  override incomingRequest(request: FastifyRequest): void {
    (request as FastifyRequest & LoggedRequest)[PEER] = request.ip;
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (request.url.startsWith('/health/')) {
      return;
    }
    // a refusal by a rate limit is a security event: visible at LOG_LEVEL=warn
    const level = reply.statusCode === 429 ? 'warn' : error ? 'error' : 'info';
    if (!(reply.log as Logger).isLevelEnabled(level)) {
      return;
    }
    const logged = request as FastifyRequest & LoggedRequest;
    const caller = logged.caller;
    const line = {
      // Fastify's `req` serializer reads method, url and ip (as remoteAddress) from this object
      req: {
        method: request.method,
        url: redactUrl(request.url),
        ip: logged[PEER],
      },
      res: { statusCode: reply.statusCode },
      responseTime: reply.elapsedTime,
      user_id: caller?.userId,
      key_id: caller?.keyId,
      client_id: caller?.clientId,
      auth: caller?.method,
      operation_name: logged.operationName,
      operation_type: logged.operationType,
    };
    if (level === 'warn') {
      reply.log.warn({ ...line, event: 'rate_limited' }, 'request rate limited');
    } else if (error) {
      reply.log.error({ ...line, err: error }, 'request errored');
    } else {
      reply.log.info(line, 'request completed');
    }
  }
}

/**
 * Nest's LoggerService over the same pino logger (JSON lines). Lines about a request are written with
 * that request's logger (`request.log`, which carries `request_id`), e.g. by the error filter; an
 * AsyncLocalStorage to find it implicitly cost ~14 µs per request on Node 20 (docs/performance.md).
 */
export class PinoLoggerService implements LoggerService {
  constructor(private readonly root: Logger) {}

  private write(
    level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace',
    message: unknown,
    params: unknown[],
  ) {
    const logger = this.root;
    if (!this.root.isLevelEnabled(level)) {
      return;
    }
    // Nest passes the context (class name) last; an error's stack may precede it
    const context =
      params.length > 0 && typeof params[params.length - 1] === 'string' ? params.pop() : undefined;
    const fields: Record<string, unknown> = context ? { context } : {};
    if (message instanceof Error) {
      logger[level]({ ...fields, err: message }, message.message);
    } else if (message !== null && typeof message === 'object') {
      // `logger.warn({ err }, 'text')`: pino's object-first form
      logger[level](
        { ...fields, ...message },
        typeof params[0] === 'string' ? params[0] : undefined,
      );
    } else {
      if (level === 'error' && typeof params[0] === 'string' && params[0].includes('\n    at ')) {
        fields.stack = params[0];
      }
      logger[level](fields, String(message));
    }
  }

  log(message: unknown, ...params: unknown[]) {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]) {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]) {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]) {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]) {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]) {
    this.write('fatal', message, params);
  }
}
