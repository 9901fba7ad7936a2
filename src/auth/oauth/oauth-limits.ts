import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { AppConfig } from '../../config/config.js';
import {
  BUCKET_AUTH,
  RateLimitService,
  replySink,
  secondsUntil,
  writeRateLimitHeaders,
  type HeaderSink,
} from '../../rate-limit/rate-limit.service.js';
import type { CredentialAttempts } from '../credential-attempts.js';
import { errorPage } from './oauth-pages.js';

/**
 * The browser-facing authorization endpoints (`/oauth/auth`, `/oauth/auth/{uid}`) and the
 * sign-in/consent pages (`/oauth/interaction/...`): each request counts one against the client
 * address's request bucket (RATE_LIMIT per RATE_LIMIT_WINDOW_S, shared with its REST and GraphQL
 * requests; there are no API credentials on these routes). Every response carries `RateLimit-*`;
 * past the limit the answer is a 429 page with `Retry-After`, and nothing is stored. Returns true
 * when it answered.
 */
export async function refusedByRequestLimit(
  limits: RateLimitService,
  config: AppConfig,
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<boolean> {
  const hit = await limits.countRefusedRequest(undefined, req.ip);
  if (hit === undefined) {
    return false; // limits off, or the counter store unavailable: fail open, as everywhere
  }
  writeRateLimitHeaders(replySink(reply), config.rateLimit, hit);
  if (hit.allowed) {
    return false;
  }
  const retry = secondsUntil(hit.resetMs);
  const page = errorPage('rate_limited', `retry in ${retry} s`, 429);
  await reply.code(429).headers(page.headers).header('Retry-After', String(retry)).send(page.html);
  return true;
}

/** The body of the error responses of the token-family endpoints past a limit (RFC 6749 style). */
function rateLimitedBody(retry: number, what: string) {
  return {
    error: 'rate_limited',
    error_description: `${what}; retry in ${retry} s`,
  };
}

/**
 * `POST /oauth/token/revocation` (RFC 7009) authenticates the client: a failed client
 * authentication (`401 invalid_client`: unknown client, wrong secret) counts one against the
 * address's credential bucket, the one failed passwords and tokens count against (AUTH_RATE_LIMIT
 * per AUTH_RATE_LIMIT_WINDOW_S). Past it, a failed authentication is answered 429 instead of 401,
 * with `Retry-After`, `RateLimit-*` and `{"error":"rate_limited",...}`, while a right secret still
 * works: one client's failures never cost another client behind the same address its valid
 * credentials. Only past AUTH_ADDRESS_HARD_LIMIT failures (a spray) is nothing from that address
 * checked, as for passwords. A request that authenticates is never counted. A Koa middleware of oidc-provider: it runs around the endpoint and can rewrite the
 * answer before it is sent.
 */
export function revocationFailureLimit(
  limits: RateLimitService,
  attempts: CredentialAttempts,
  config: AppConfig,
) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<unknown>): Promise<void> => {
    if (ctx.method !== 'POST' || ctx.path !== '/token/revocation' || !limits.enabled) {
      await next();
      return;
    }
    const sink: HeaderSink = (name, value) => ctx.set(name, value);
    const refuse = (count: number, resetMs: number) => {
      const retry = secondsUntil(resetMs);
      writeRateLimitHeaders(sink, config.authRateLimit, { count, resetMs });
      ctx.set('Retry-After', String(retry));
      ctx.set('Cache-Control', 'no-store');
      ctx.remove('WWW-Authenticate');
      ctx.status = 429;
      ctx.body = rateLimitedBody(retry, 'Too many failed client authentications from this address');
    };
    const address = ctx.ip;
    const key = limits.key(BUCKET_AUTH, limits.ipTracker(address));
    const [state] = (await limits.store.peek([key], config.authRateLimitWindowS * 1000)) ?? [];
    if (state && state.count >= config.authAddressHardLimit) {
      limits.record(BUCKET_AUTH, { allowed: false });
      refuse(state.count, state.resetMs);
      return;
    }
    await next();
    const error = (ctx.body as { error?: unknown } | undefined)?.error;
    if (ctx.status !== 401 || error !== 'invalid_client') {
      return;
    }
    const throttle = await attempts.failed(address);
    if (throttle) {
      refuse(throttle.count, throttle.resetMs);
    }
  };
}
