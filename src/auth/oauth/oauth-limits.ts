import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
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
import type { CredentialAttempts } from '../../identity/credential-attempts.js';
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

/** Counter of failed client authentications per OAuth client: `<prefix>rl:oauth-client-auth:<client>`. */
const BUCKET_OAUTH_CLIENT_AUTH = 'oauth-client-auth';
/** Counter of client-authenticated token-endpoint requests per OAuth client. */
const BUCKET_OAUTH_TOKEN = 'oauth-token';
const OAUTH_TOKEN_WINDOW_S = 60;
/** oidc-provider's own limit on a token-endpoint body. */
const BODY_LIMIT = 56 * 1024;

/** The client a token-endpoint request names (HTTP Basic user, else the form's `client_id`). */
function claimedClientId(
  authorization: string | undefined,
  form: URLSearchParams,
): string | undefined {
  const basic = /^basic\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (basic) {
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    try {
      return decodeURIComponent(colon >= 0 ? decoded.slice(0, colon) : decoded) || undefined;
    } catch {
      return undefined;
    }
  }
  return form.get('client_id') ?? undefined;
}

/**
 * Reads the form body of a token-endpoint request and puts an identical stream in its place for
 * oidc-provider's own parser. Undefined (nothing read) for anything but a plain form under the size
 * limit: the provider then answers it as it would.
 */
async function readForm(ctx: KoaContextWithOIDC): Promise<URLSearchParams | undefined> {
  const type = String(ctx.get('content-type')).split(';', 1)[0]?.trim().toLowerCase();
  const length = Number(ctx.get('content-length'));
  if (type !== 'application/x-www-form-urlencoded' || !(length <= BODY_LIMIT)) {
    return undefined;
  }
  const original = ctx.req;
  const chunks: Buffer[] = [];
  for await (const chunk of original.iterator({ destroyOnReturn: false })) {
    chunks.push(chunk as Buffer);
  }
  const body = Buffer.concat(chunks);
  const replay = Readable.from([body], { objectMode: false }) as Readable &
    Partial<IncomingMessage>;
  Object.assign(replay, { headers: original.headers, socket: original.socket });
  ctx.req = replay as IncomingMessage;
  return new URLSearchParams(body.toString('utf8'));
}

/**
 * The limits of the client-authenticating endpoints, `POST /oauth/token` and
 * `POST /oauth/token/revocation` (a Koa middleware of oidc-provider, around the endpoint):
 *
 * - A request the client authenticates in is never counted against the address's credential
 *   bucket. It counts one against its client's token-request budget (OAUTH_TOKEN_RATE_LIMIT per
 *   minute, shared by every instance); past it the client's requests are answered 429
 *   `rate_limited` with `Retry-After` until the window ends. The budget is only ever spent by
 *   requests that authenticated as the client, so nobody else can use it up.
 * - A failed client authentication (`401 invalid_client`: unknown client, wrong secret) counts one
 *   against the address's credential bucket (AUTH_RATE_LIMIT per AUTH_RATE_LIMIT_WINDOW_S) and one
 *   against the named client's failure bucket (the same budget). Past either, a failed
 *   authentication is answered 429 instead of 401, while a right secret still works. Only past
 *   AUTH_ADDRESS_HARD_LIMIT failures (a spray) is nothing from that address checked, as for
 *   passwords.
 */
export function tokenEndpointLimits(
  limits: RateLimitService,
  attempts: CredentialAttempts,
  config: AppConfig,
) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<unknown>): Promise<void> => {
    if (
      ctx.method !== 'POST' ||
      (ctx.path !== '/token' && ctx.path !== '/token/revocation') ||
      !limits.enabled
    ) {
      await next();
      return;
    }
    const sink: HeaderSink = (name, value) => ctx.set(name, value);
    const refuse = (limit: number, count: number, resetMs: number, what: string) => {
      const retry = secondsUntil(resetMs);
      writeRateLimitHeaders(sink, limit, { count, resetMs });
      ctx.set('Retry-After', String(retry));
      ctx.set('Cache-Control', 'no-store');
      ctx.remove('WWW-Authenticate');
      ctx.status = 429;
      ctx.body = rateLimitedBody(retry, what);
    };
    const address = ctx.ip;
    const form = (await readForm(ctx)) ?? new URLSearchParams();
    const claimed = claimedClientId(ctx.get('authorization') || undefined, form);
    const tokenWindowMs = OAUTH_TOKEN_WINDOW_S * 1000;
    const authWindowMs = config.authRateLimitWindowS * 1000;
    const addressKey = limits.key(BUCKET_AUTH, limits.ipTracker(address));
    const clientKey = claimed && limits.key(BUCKET_OAUTH_TOKEN, clientTracker(claimed));
    const [byAddress] = (await limits.store.peek([addressKey], authWindowMs)) ?? [];
    if (byAddress && byAddress.count >= config.authAddressHardLimit) {
      limits.record(BUCKET_AUTH, { allowed: false });
      refuse(
        config.authRateLimit,
        byAddress.count,
        byAddress.resetMs,
        'Too many failed client authentications from this address',
      );
      return;
    }
    if (clientKey) {
      const [byClient] = (await limits.store.peek([clientKey], tokenWindowMs)) ?? [];
      if (byClient && byClient.count >= config.oauthTokenRateLimit) {
        limits.record(BUCKET_OAUTH_TOKEN, { allowed: false });
        refuse(
          config.oauthTokenRateLimit,
          byClient.count,
          byClient.resetMs,
          'Too many token requests by this client',
        );
        return;
      }
    }
    await next();
    const error = (ctx.body as { error?: unknown } | undefined)?.error;
    const authenticated = ctx.oidc?.client?.clientId;
    if (ctx.status === 401 && error === 'invalid_client') {
      const throttle = await attempts.failed(address);
      if (throttle) {
        refuse(
          throttle.limit,
          throttle.count,
          throttle.resetMs,
          'Too many failed client authentications from this address',
        );
        return;
      }
      if (claimed) {
        const [byClient] =
          (await limits.store.addAll(
            [limits.key(BUCKET_OAUTH_CLIENT_AUTH, clientTracker(claimed))],
            1,
            authWindowMs,
          )) ?? [];
        if (byClient && byClient.count > config.authRateLimit) {
          limits.record(BUCKET_OAUTH_CLIENT_AUTH, { allowed: false });
          refuse(
            config.authRateLimit,
            byClient.count,
            byClient.resetMs,
            'Too many failed authentications of this client',
          );
        }
      }
      return;
    }
    if (authenticated) {
      const [state] =
        (await limits.store.addAll(
          [limits.key(BUCKET_OAUTH_TOKEN, clientTracker(authenticated))],
          1,
          tokenWindowMs,
        )) ?? [];
      limits.record(BUCKET_OAUTH_TOKEN, state && { allowed: true });
      if (state) {
        writeRateLimitHeaders(sink, config.oauthTokenRateLimit, state);
      }
    }
  };
}

/** Client ids are chosen by the server, but a claimed one is anything: keep the key short and plain. */
function clientTracker(clientId: string): string {
  return `client:${createHash('sha256').update(clientId).digest('hex').slice(0, 32)}`;
}
