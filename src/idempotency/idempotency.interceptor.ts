import { createHash } from 'node:crypto';
import {
  Inject,
  Injectable,
  Logger,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { from, lastValueFrom, of, type Observable } from 'rxjs';
import type { Caller } from '../identity/caller.js';
import { roleAtLeast, type Role } from '../identity/role.js';
import { BadRequest, DomainError } from '../common/errors.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { DatabaseService, type HeldOutcome, type TxContext } from '../database/database.service.js';
import { DB_RETRY_AFTER_S } from '../database/db-errors.js';
import {
  IdempotencyRepository,
  type NewKeyRecord,
  type StoredResponse,
} from './idempotency.repository.js';

import { IDEMPOTENCY_HEADER } from '../common/openapi/headers.js';
import { routeUrl } from '../common/route-url.js';
const REPLAYED_HEADER = 'Idempotent-Replayed';
/** 1 to 255 visible ASCII characters (a UUID, a ULID, any client-chosen token). */
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;
/** The response headers that describe the result, and so are replayed with it. */
const KEPT_HEADERS = ['content-type', 'location', 'etag', 'last-modified', 'link'];

type RequestState =
  | { kind: 'replay'; response: StoredResponse }
  /** Ran as a dry run (the caller's rights changed): the stored response only if it succeeded. */
  | { kind: 'replay-if-allowed'; response: StoredResponse }
  | HeldState;

/** A first request: its first transaction is held open and commits with its answer (`answer`). */
interface HeldState {
  kind: 'held';
  /** Gives the held transaction the answer to keep, or null: roll the change back. */
  answer: (response: StoredResponse | null) => void;
  /** How the held transaction ended (DatabaseService.runHeld). */
  outcome: () => Promise<HeldOutcome>;
  /** Keeps the answer of a request that held no transaction. */
  storeAlone: (response: StoredResponse) => Promise<void>;
  storedBody: (body: string) => string;
  /** Another request held the key: this one ran nothing and keeps nothing. */
  taken: boolean;
  done: () => void;
}

/** Set by the interceptor, read by the onSend hook below: one entry per keyed request. */
const states = new WeakMap<FastifyRequest, RequestState>();

/** Rolls a held transaction back: the answer is not kept (5xx, 429), so nothing may commit. */
class NotKept extends Error {
  constructor() {
    super('Idempotency-Key: answer not kept, rolled back');
  }
}

/** Another transaction holds the key now, or committed it after the first look. */
class KeyTaken extends Error {
  constructor() {
    super('Idempotency-Key: taken by another request');
  }
}

/**
 * How long a held transaction waits for its request's answer. Only a handler that never answers
 * reaches it (the HTTP timeouts end a request long before); then the request's change rolls back.
 */
const ANSWER_TIMEOUT_MS = 120_000;

const IDEMPOTENT_OPTIONS = Symbol('idempotentOptions');

/** What a route tells the interceptor (`@Idempotent(options)`). */
export interface IdempotentOptions {
  /**
   * The body to store for replays, from the body sent: a route whose answer shows a secret once
   * stores it without the secret (a replay then says `null` there).
   */
  storedBody?: (body: string) => string;
}

/** Route metadata read by the interceptor (set by `@Idempotent`). */
export function idempotentOptions(options: IdempotentOptions): MethodDecorator {
  return (_target, _key, descriptor) => {
    Reflect.defineMetadata(IDEMPOTENT_OPTIONS, options, descriptor.value as object);
    return descriptor;
  };
}

const keepBody = (body: string) => body;

function inProgress(http: ReturnType<ExecutionContext['switchToHttp']>): DomainError {
  void http.getResponse<FastifyReply>().header('Retry-After', '1');
  return new DomainError(
    'idempotency_key_in_progress',
    'A request with this Idempotency-Key is still being processed; retry it later',
  );
}

function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** JSON with object members sorted: the same body sent with its members in another order is the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) {
    return `[${value.map(canonical).join(',')}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Whose key it is: a key is never shared between callers (one cannot replay another's response). */
function scopeOf(req: FastifyRequest & { caller?: Caller }): string {
  const caller = req.caller;
  if (!caller) {
    return `address:${req.ip}`;
  }
  return caller.clientId
    ? `user:${caller.userId} client:${caller.clientId}`
    : `user:${caller.userId}`;
}

/**
 * The route a request reached, however its path was spelled: the route's pattern with its decoded
 * parameters encoded the one canonical way. `/api/v1/%70osts` and `/api/v1/posts` are one route; a
 * plainly spelled path is its own canonical form.
 */
function routeOf(req: FastifyRequest): string {
  const pattern = routeUrl(req);
  if (!pattern) {
    return req.url.split('?', 1)[0] ?? '';
  }
  const params = (req.params ?? {}) as Record<string, string | undefined>;
  return pattern.replace(/:(\w+)|\*/g, (whole, name: string | undefined) =>
    encodeURIComponent(params[name ?? '*'] ?? ''),
  );
}

/** The decoded query, members sorted, without the `api_key` credential; '' when there is none. */
function queryOf(req: FastifyRequest): string {
  const query = { ...((req.query ?? {}) as Record<string, unknown>) };
  delete query.api_key;
  return Object.keys(query).length === 0 ? '' : canonical(query);
}

/** What the caller may do: its effective role and, through an OAuth client, its scopes. */
interface Rights {
  role: Role | null;
  scopes: string[] | null;
}

function rightsOf(caller: Caller | undefined): Rights {
  return {
    role: caller?.role ?? null,
    scopes: caller?.scopes ? [...caller.scopes].sort() : null,
  };
}

/**
 * Do the rights `now` include `then` (those a key's first request ran with)? A role at least as
 * high, and every scope (a first-party caller has no scopes: its whole role). Unknown `then`
 * (a record from before rights were kept) includes nothing.
 */
function covers(now: Rights, then: string | null): boolean {
  if (then === null) {
    return false;
  }
  const before = JSON.parse(then) as Rights;
  if (before.role !== null && (now.role === null || !roleAtLeast(now.role, before.role))) {
    return false;
  }
  if (now.scopes === null) {
    return true;
  }
  return before.scopes !== null && before.scopes.every((s) => now.scopes!.includes(s));
}

/**
 * `Idempotency-Key` on the POSTs that create (docs/idempotency.md, Stripe's semantics): the first
 * request with a key runs and its response is kept; the same key and body again gets that response
 * back with `Idempotent-Replayed: true`; another body is 422; while the first still runs, 409.
 * Runs after the guards, so the caller (the key's scope) is known and its current role floor and
 * scopes were checked. A replay to a caller with fewer rights than the first request had runs the
 * request as a dry run first and is served only if that succeeds (docs/idempotency.md).
 *
 * The first request runs in a transaction held open until its answer is known (the onSend hook
 * below): its change and the stored answer commit together. After a commit the key always
 * replays; if the transaction does not commit, nothing happened and the key is free at once.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  /** Keys whose first request runs on this instance now (the quick 409 before any SQL). */
  private readonly running = new Set<string>();

  constructor(
    private readonly repo: IdempotencyRepository,
    private readonly db: DatabaseService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async intercept(ctx: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const http = ctx.switchToHttp();
    const req = http.getRequest<FastifyRequest & { caller?: Caller }>();
    const header = req.headers['idempotency-key'];
    if (header === undefined) {
      return next.handle();
    }
    if (typeof header !== 'string' || !KEY_SHAPE.test(header)) {
      throw BadRequest('Invalid Idempotency-Key', [
        {
          field: IDEMPOTENCY_HEADER,
          message: 'must be one value of 1 to 255 visible ASCII characters (no spaces)',
        },
      ]);
    }
    const id = sha256(JSON.stringify([scopeOf(req), req.method, routeOf(req), header]));
    const requestHash = sha256(JSON.stringify([queryOf(req), canonical(req.body ?? null)]));
    const rights = rightsOf(req.caller);
    const now = new Date().toISOString();
    const record = await this.repo.find(id, now);
    if (record) {
      if (record.requestHash !== requestHash) {
        throw new DomainError(
          'idempotency_key_reused',
          'This Idempotency-Key was already used with another request body; use a new key for a new request',
        );
      }
      if (covers(rights, record.callerRights)) {
        states.set(req, { kind: 'replay', response: record.response });
        return of(undefined); // the onSend hook sends the stored response instead
      }
      // fewer rights than the first request had (a lower key, a demotion, fewer scopes): run the
      // request as a dry run, which commits nothing; the onSend hook replays only if it succeeded
      states.set(req, { kind: 'replay-if-allowed', response: record.response });
      return from(this.db.dryRun(() => lastValueFrom(next.handle(), { defaultValue: undefined })));
    }
    if (this.running.has(id)) {
      throw inProgress(http);
    }
    const options = Reflect.getMetadata(IDEMPOTENT_OPTIONS, ctx.getHandler()) as
      | IdempotentOptions
      | undefined;
    const recordOf = (response: StoredResponse): NewKeyRecord => ({
      requestHash,
      callerRights: JSON.stringify(rights),
      createdAt: now,
      expiresAt: new Date(Date.now() + this.config.idempotencyTtlS * 1000).toISOString(),
      response,
    });
    this.running.add(id);
    let answer!: (response: StoredResponse | null) => void;
    const answered = new Promise<StoredResponse | null>((resolve) => (answer = resolve));
    const timer = setTimeout(() => {
      answer(null);
      this.running.delete(id);
    }, ANSWER_TIMEOUT_MS);
    timer.unref();
    /** Takes the key in `tx`: false when another transaction holds it or committed it already. */
    const take = async (tx: TxContext): Promise<boolean> =>
      (await this.repo.lock(tx.manager, id)) &&
      !(await this.repo.findIn(tx.manager, id, new Date().toISOString()));
    const store = async (tx: TxContext, response: StoredResponse) => {
      if (!(await this.repo.store(tx.manager, id, recordOf(response)))) {
        throw new KeyTaken();
      }
    };
    const state: HeldState = {
      kind: 'held',
      answer,
      storedBody: options?.storedBody ?? keepBody,
      taken: false,
      outcome: () => Promise.resolve('none'),
      // a keyed request whose handler held no transaction (it failed before or in its first one)
      // keeps its answer in a transaction of its own: nothing else changed
      storeAlone: (response) =>
        this.db.outsideHeld(() =>
          this.db.transaction(async (tx) => {
            if (await take(tx)) {
              await store(tx, response);
            }
          }),
        ),
      done: () => {
        clearTimeout(timer);
        this.running.delete(id);
      },
    };
    states.set(req, state);
    const run = this.db.runHeld(
      {
        // the first transaction the handler opens takes the key: another transaction holds it now
        // (another instance runs it), or committed it since the look above -> 409, nothing runs
        begin: async (tx) => {
          if (!(await take(tx))) {
            throw new KeyTaken();
          }
        },
        end: async (tx) => {
          const response = await answered;
          if (!response) {
            throw new NotKept();
          }
          await store(tx, response);
        },
      },
      () => lastValueFrom(next.handle(), { defaultValue: undefined }),
    );
    state.outcome = () => run.outcome();
    return from(
      run.result.catch((err: unknown) => {
        if (err instanceof KeyTaken) {
          state.taken = true;
          throw inProgress(http);
        }
        throw err;
      }),
    );
  }
}

/**
 * Commits a keyed request's change with its first response (any status below 500 but 429; those
 * roll the change back, so a retry runs again), and sends a stored one in place of a replayed
 * request's. An onSend hook sees the final status, headers and body, whether a handler or the
 * error filter made them. A commit that fails turns the answer into a 503: nothing happened.
 */
/** Drops the headers that describe a result, before another answer takes its place. */
function clearResultHeaders(reply: FastifyReply): void {
  for (const name of KEPT_HEADERS) {
    reply.removeHeader(name);
  }
}

export function registerIdempotencyHook(fastify: FastifyInstance): void {
  const logger = new Logger('Idempotency');
  const settle = async (
    state: RequestState,
    req: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
  ): Promise<unknown> => {
    if (state.kind === 'replay-if-allowed' && reply.statusCode >= 300) {
      return payload; // what a fresh request gets now: the refusal, not the stored response
    }
    if (state.kind === 'replay' || state.kind === 'replay-if-allowed') {
      clearResultHeaders(reply);
      void reply
        .code(state.response.status)
        .headers(state.response.headers)
        .header(REPLAYED_HEADER, 'true');
      return state.response.body;
    }
    try {
      return await settleHeld(state, req, reply, payload);
    } finally {
      state.done();
    }
  };
  const settleHeld = async (
    state: HeldState,
    req: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
  ): Promise<unknown> => {
    const status = reply.statusCode;
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload : null;
    let kept: StoredResponse | null = null;
    if (status < 500 && status !== 429 && body !== null && !state.taken) {
      const headers: Record<string, string> = {};
      for (const name of KEPT_HEADERS) {
        const value = reply.getHeader(name);
        if (value !== undefined) {
          headers[name] = String(value);
        }
      }
      kept = { status, headers, body: state.storedBody(body.toString()) };
    }
    state.answer(kept);
    let outcome: HeldOutcome;
    try {
      outcome = await state.outcome();
    } catch (err) {
      if (err instanceof NotKept) {
        return payload;
      }
      // the change and its record did not commit (the connection dropped, the database went
      // away): whatever the handler answered, nothing happened, and a retry runs the key again
      logger.warn({ err }, 'the Idempotency-Key transaction did not commit');
      clearResultHeaders(reply);
      void reply
        .code(503)
        .header('Retry-After', String(DB_RETRY_AFTER_S))
        .header('Content-Type', 'application/json; charset=utf-8');
      return JSON.stringify({
        error: {
          code: 'service_unavailable',
          message: 'The database is temporarily unavailable; nothing was changed, retry shortly',
          request_id: req.id,
        },
      });
    }
    if (outcome === 'none' && kept) {
      try {
        await state.storeAlone(kept);
      } catch (err) {
        // nothing changed (no transaction was held): the answer stands, and a retry runs again
        logger.warn({ err }, 'could not keep the Idempotency-Key answer');
      }
    }
    return payload;
  };
  // a callback hook: the requests without a keyed state (every read) pass without a promise
  fastify.addHook('onSend', (req, reply, payload, done) => {
    const state = states.get(req);
    if (!state) {
      done(null, payload);
      return;
    }
    states.delete(req);
    settle(state, req, reply, payload).then(
      (body) => done(null, body),
      (err: unknown) => done(err instanceof Error ? err : new Error(String(err))),
    );
  });
}
