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
import { DatabaseService } from '../database/database.service.js';
import { IdempotencyRepository, type StoredResponse } from './idempotency.repository.js';

import { IDEMPOTENCY_HEADER } from '../common/openapi/headers.js';
import { routeUrl } from '../http/route-url.js';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
/** 1 to 255 visible ASCII characters (a UUID, a ULID, any client-chosen token). */
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;
/** How long a running request holds its key before a retry may take it over (its runner died). */
const LOCK_MS = 60_000;
/** The response headers that describe the result, and so are replayed with it. */
const KEPT_HEADERS = ['content-type', 'location', 'etag', 'last-modified', 'link'];

type RequestState =
  | { kind: 'replay'; response: StoredResponse }
  /** Ran as a dry run (the caller's rights changed): the stored response only if it succeeded. */
  | { kind: 'replay-if-allowed'; response: StoredResponse }
  | { kind: 'claimed'; id: string; repo: IdempotencyRepository };

/** Set by the interceptor, read by the onSend hook below: one entry per keyed request. */
const states = new WeakMap<FastifyRequest, RequestState>();

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
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
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
    const now = Date.now();
    const claim = await this.repo.claim(
      id,
      requestHash,
      JSON.stringify(rights),
      new Date(now).toISOString(),
      new Date(now + LOCK_MS).toISOString(),
      new Date(now + this.config.idempotencyTtlS * 1000).toISOString(),
    );
    switch (claim.kind) {
      case 'mismatch':
        throw new DomainError(
          'idempotency_key_reused',
          'This Idempotency-Key was already used with another request body; use a new key for a new request',
        );
      case 'in_progress':
        void http.getResponse<FastifyReply>().header('Retry-After', '1');
        throw new DomainError(
          'idempotency_key_in_progress',
          'A request with this Idempotency-Key is still being processed; retry it later',
        );
      case 'replay':
        if (covers(rights, claim.callerRights)) {
          states.set(req, { kind: 'replay', response: claim.response });
          return of(undefined); // the onSend hook sends the stored response instead
        }
        // fewer rights than the first request had (a lower key, a demotion, fewer scopes): run the
        // request as a dry run, which commits nothing; the onSend hook replays only if it succeeded
        states.set(req, { kind: 'replay-if-allowed', response: claim.response });
        return from(
          this.db.dryRun(() => lastValueFrom(next.handle(), { defaultValue: undefined })),
        );
      case 'claimed':
        states.set(req, { kind: 'claimed', id, repo: this.repo });
        return next.handle();
    }
  }
}

/**
 * Keeps the first response of a claimed key (any status below 500 but 429: those change nothing
 * the client could not retry) and sends a stored one in place of a replayed request's. An onSend
 * hook sees the final status, headers and body, whether a handler or the error filter made them.
 */
export function registerIdempotencyHook(fastify: FastifyInstance): void {
  const logger = new Logger('Idempotency');
  const settle = async (
    state: RequestState,
    reply: FastifyReply,
    payload: unknown,
  ): Promise<unknown> => {
    if (state.kind === 'replay-if-allowed' && reply.statusCode >= 300) {
      return payload; // what a fresh request gets now: the refusal, not the stored response
    }
    if (state.kind === 'replay' || state.kind === 'replay-if-allowed') {
      for (const name of KEPT_HEADERS) {
        reply.removeHeader(name);
      }
      void reply
        .code(state.response.status)
        .headers(state.response.headers)
        .header(REPLAYED_HEADER, 'true');
      return state.response.body;
    }
    const status = reply.statusCode;
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload : null;
    try {
      if (status >= 500 || status === 429 || body === null) {
        await state.repo.release(state.id);
      } else {
        const headers: Record<string, string> = {};
        for (const name of KEPT_HEADERS) {
          const value = reply.getHeader(name);
          if (value !== undefined) {
            headers[name] = String(value);
          }
        }
        await state.repo.complete(state.id, { status, headers, body: body.toString() });
      }
    } catch (err) {
      // the key stays claimed until its lock lapses; the response itself still goes out
      logger.error({ err }, 'could not record the Idempotency-Key result');
    }
    return payload;
  };
  // a callback hook: the requests without a claimed key (every read) pass without a promise
  fastify.addHook('onSend', (req, reply, payload, done) => {
    const state = states.get(req);
    if (!state) {
      done(null, payload);
      return;
    }
    states.delete(req);
    settle(state, reply, payload).then(
      (body) => done(null, body),
      (err: unknown) => done(err instanceof Error ? err : new Error(String(err))),
    );
  });
}
