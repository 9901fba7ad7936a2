import type { IncomingMessage } from 'node:http';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { APP_CONFIG, type AppConfig } from '../../config/config.js';
import { RateLimitService } from '../../rate-limit/rate-limit.service.js';
import { CredentialAttempts } from '../../identity/credential-attempts.js';
import { refusedByRequestLimit, tokenEndpointLimits } from './oauth-limits.js';
import { OAuthInteractionsService } from './oauth-interactions.service.js';
import { STYLESHEET, STYLESHEET_PATH } from './oauth-pages.js';
import { inProviderContext } from './oidc-library.js';
import { OidcProviderService } from './oidc-provider.service.js';

const MOUNT = '/oauth';
const FORM_LIMIT = 16 * 1024;

type UidRequest = FastifyRequest<{ Params: { uid: string } }>;

/**
 * Koa (oidc-provider) trusts X-Forwarded-* whenever `proxy` is on; Fastify trusts them only from
 * TRUSTED_PROXIES. Rewriting them before the provider sees a request makes both agree: the client
 * address is Fastify's (a forwarded header from anyone else never counts), and scheme and host are
 * PUBLIC_URL's, so every URL the provider builds (endpoints, redirects) is under the issuer.
 */
function forwardedView(publicUrl: string): (req: FastifyRequest) => void {
  const url = new URL(publicUrl);
  const proto = url.protocol.slice(0, -1);
  return (req) => {
    const headers = req.raw.headers;
    headers['x-forwarded-proto'] = proto;
    headers['x-forwarded-host'] = url.host;
    headers['x-forwarded-for'] = req.ip;
  };
}

/**
 * Mounts the authorization server at /oauth on the Fastify instance (outside Nest's /api/v1
 * routing and guards): the sign-in/consent pages and their stylesheet, and oidc-provider's own
 * endpoints (discovery, authorize, token, JWKS, revocation, userinfo). A failed client
 * authentication at `/oauth/token` or the revocation endpoint counts against the address's
 * credential bucket and the client's failure bucket, an authenticated one against the client's
 * token-request budget; `/oauth/auth` and the pages count in the address's request limit
 * (oauth-limits.ts, docs/rate-limits.md).
 */
export function registerOAuthRoutes(app: NestFastifyApplication): void {
  const fastify = app.getHttpAdapter().getInstance();
  const oidc = app.get(OidcProviderService);
  const interactions = app.get(OAuthInteractionsService);
  const limits = app.get(RateLimitService);
  const config = app.get<AppConfig>(APP_CONFIG);
  const forwardFastifyView = forwardedView(config.publicUrl);

  void fastify.register((pages, _opts, done) => {
    pages.removeAllContentTypeParsers();
    pages.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: FORM_LIMIT },
      (_req, body, parsed) => {
        parsed(null, Object.fromEntries(new URLSearchParams(body as string)));
      },
    );
    pages.addHook('onRequest', async (req, reply) => {
      forwardFastifyView(req);
      // the sign-in and consent pages count in the address's request limit (oauth-limits.ts)
      if (
        req.url.startsWith(`${MOUNT}/interaction/`) &&
        (await refusedByRequestLimit(limits, config, req, reply))
      ) {
        return reply; // answered: the route does not run
      }
      return undefined;
    });
    pages.get(STYLESHEET_PATH, (_req, reply) =>
      reply
        .header('Content-Type', 'text/css; charset=utf-8')
        .header('Cache-Control', 'public, max-age=3600')
        .send(STYLESHEET),
    );
    pages.get(`${MOUNT}/interaction/:uid`, (req: UidRequest, reply) =>
      interactions.show(req, reply),
    );
    pages.post(`${MOUNT}/interaction/:uid/login`, (req: UidRequest, reply) =>
      interactions.login(req, reply),
    );
    pages.post(`${MOUNT}/interaction/:uid/confirm`, (req: UidRequest, reply) =>
      interactions.confirm(req, reply),
    );
    pages.post(`${MOUNT}/interaction/:uid/abort`, (req: UidRequest, reply) =>
      interactions.abort(req, reply),
    );
    done();
  });

  void fastify.register((server, _opts, done) => {
    // oidc-provider reads the body stream itself: leave it unread here
    server.removeAllContentTypeParsers();
    server.addContentTypeParser('*', (_req, _payload, parsed) => parsed(null));
    // the token and revocation endpoints' limits (added before callback(), which composes the
    // middleware)
    oidc.provider.use(tokenEndpointLimits(limits, app.get(CredentialAttempts), config));
    const callback = oidc.provider.callback();
    const handler = async (req: FastifyRequest, reply: FastifyReply) => {
      const path = req.url.split('?', 1)[0] ?? '';
      // each authorization request stores an interaction: it counts in the address's request limit
      if (
        (path === `${MOUNT}/auth` || path.startsWith(`${MOUNT}/auth/`)) &&
        (await refusedByRequestLimit(limits, config, req, reply))
      ) {
        return reply;
      }
      forwardFastifyView(req);
      reply.hijack();
      const raw = req.raw as IncomingMessage & { originalUrl?: string };
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined && /^(x-request-id|ratelimit-)/i.test(name)) {
          reply.raw.setHeader(name, value);
        }
      }
      raw.originalUrl = raw.url;
      raw.url = (raw.url ?? '').slice(MOUNT.length) || '/';
      await inProviderContext(() => callback(raw, reply.raw));
    };
    server.all(MOUNT, handler);
    server.all(`${MOUNT}/*`, handler);
    done();
  });
}
