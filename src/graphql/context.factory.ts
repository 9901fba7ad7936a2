import { HeaderMap } from '@apollo/server';
import { Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLError } from 'graphql';
import { AuthService } from '../auth/auth.service.js';
import type { MaybeCaller } from '../auth/caller.js';
import { WWW_AUTHENTICATE } from '../common/errors.js';
import { graphqlRateLimited } from '../rate-limit/graphql-rate-limit.plugin.js';
import { RateLimitService, TOO_MANY_FAILURES } from '../rate-limit/rate-limit.service.js';
import type { GqlContext } from './context.js';
import { LoaderRegistry } from './loaders.js';

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** HTTP 401 + WWW-Authenticate with a GraphQL error body (presented credentials are invalid). */
export function invalidCredentials(): GraphQLError {
  return new GraphQLError('Invalid credentials', {
    extensions: {
      code: 'UNAUTHENTICATED',
      http: { status: 401, headers: new HeaderMap([['www-authenticate', WWW_AUTHENTICATE]]) },
    },
  });
}

const PREFLIGHT_HEADERS = [
  'apollo-require-preflight',
  'x-apollo-operation-name',
  'graphql-preflight',
];

/**
 * CSRF: a browser attaches only one kind of credential on its own to a cross-site request here:
 * HTTP Basic credentials it has cached (we use no cookies). A GET carrying Basic credentials must
 * therefore prove it is not a "simple" cross-site request by sending a header that forces a CORS
 * preflight, as Apollo's csrfPrevention asks of every request. GETs with Bearer/API-key credentials
 * or none (introspection only) need no such header. POSTs must be JSON, which already preflights.
 */
function assertNotCsrf(req: FastifyRequest): void {
  if (req.method !== 'GET' || !/^basic /i.test(single(req.headers.authorization) ?? '')) {
    return;
  }
  if (PREFLIGHT_HEADERS.some((h) => req.headers[h] !== undefined)) {
    return;
  }
  throw new GraphQLError(
    'A GET request with Basic credentials must include the header apollo-require-preflight: true (CSRF protection)',
    { extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } },
  );
}

/**
 * Builds the GraphQL context once per HTTP request (Apollo's context function; on Fastify it is
 * called with `(request, reply)`) and once per WebSocket operation. The caller comes from the same
 * credentials as REST: Authorization (Basic or Bearer), X-API-Key, or `?api_key=` on GET.
 */
@Injectable()
export class GraphqlContextFactory {
  constructor(
    private readonly auth: AuthService,
    private readonly limits: RateLimitService,
  ) {}

  async forHttp(req: FastifyRequest, reply: FastifyReply): Promise<GqlContext> {
    assertNotCsrf(req);
    const authorization = single(req.headers.authorization);
    let apiKey = single(req.headers['x-api-key']);
    if (!apiKey && req.method === 'GET') {
      const q = (req.query as Record<string, unknown> | undefined)?.api_key;
      apiKey = typeof q === 'string' ? q : undefined;
    }
    let caller: MaybeCaller;
    if (authorization || apiKey) {
      // failed checks count against the address's auth bucket, as on REST (docs/rate-limits.md)
      const blocked = await this.limits.credentialChecksBlocked(req.ip);
      if (blocked) {
        throw graphqlRateLimited(TOO_MANY_FAILURES, blocked.resetMs, {
          limit: this.limits.authRateLimit,
          hit: blocked,
        });
      }
      const found = await this.auth.fromCredentials(authorization, apiKey);
      if (found === null || found === undefined) {
        await this.limits.recordFailedCredentials(req.ip);
        throw invalidCredentials();
      }
      caller = found;
    }
    return {
      transport: 'http',
      caller,
      loaders: new LoaderRegistry(),
      req,
      reply,
      requestId: req.id,
    };
  }

  /**
   * The caller of a WebSocket connection from its `connection_init` payload: `Authorization`
   * (Basic/Bearer, any letter case of the key) or `apiKey`. null = invalid credentials.
   */
  async callerFromConnectionParams(
    params: Record<string, unknown> | undefined,
  ): Promise<MaybeCaller | null> {
    const get = (...names: string[]) => {
      for (const [k, v] of Object.entries(params ?? {})) {
        if (names.includes(k.toLowerCase()) && typeof v === 'string' && v !== '') {
          return v;
        }
      }
      return undefined;
    };
    const authorization = get('authorization');
    const apiKey = get('apikey', 'api_key', 'x-api-key');
    if (!authorization && !apiKey) {
      return undefined;
    }
    return (await this.auth.fromCredentials(authorization, apiKey)) ?? null;
  }

  forSocket(caller: MaybeCaller, connectionParams?: Record<string, unknown>): GqlContext {
    // no DataLoader cache: a subscription's context lives across events and must not serve stale rows
    return { transport: 'ws', caller, loaders: new LoaderRegistry(false), connectionParams };
  }
}
