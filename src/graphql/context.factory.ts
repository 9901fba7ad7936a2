import { HeaderMap } from '@apollo/server';
import { Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLError } from 'graphql';
import type { MaybeCaller } from '../identity/caller.js';
import {
  CredentialsService,
  type CredentialCarrier,
  type DoorAnswer,
} from '../identity/credentials.service.js';
import { WWW_AUTHENTICATE } from '../common/errors.js';
import { TOO_MANY_FAILURES } from '../common/rate-limit-headers.js';
import { graphqlRateLimited } from '../rate-limit/graphql-rate-limit.plugin.js';
import type { GqlContext } from './context.js';
import { LoaderRegistry } from './loaders.js';
import { MAX_RESPONSE_BYTES, ResponseSize } from './response-size.js';

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** HTTP 401 + WWW-Authenticate with a GraphQL error body (presented credentials are invalid). */
function invalidCredentials(): GraphQLError {
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
    { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } },
  );
}

/**
 * The credentials of a WebSocket `connection_init` payload: `Authorization` (Basic or Bearer) or
 * `apiKey` (also `api_key`, `x-api-key`), keys in any letter case.
 */
function socketCarrier(
  params: Record<string, unknown> | undefined,
  address: string | undefined,
): CredentialCarrier {
  const get = (...names: string[]) => {
    for (const [k, v] of Object.entries(params ?? {})) {
      if (names.includes(k.toLowerCase()) && typeof v === 'string' && v !== '') {
        return v;
      }
    }
    return undefined;
  };
  return {
    authorization: get('authorization'),
    apiKey: get('apikey', 'api_key', 'x-api-key'),
    address,
  };
}

/**
 * Builds the GraphQL context once per HTTP request (Apollo's context function; on Fastify it is
 * called with `(request, reply)`) and once per WebSocket operation. The caller comes from the
 * credential door, as on REST: Authorization (Basic or Bearer), X-API-Key, or `?api_key=` on GET.
 */
@Injectable()
export class GraphqlContextFactory {
  constructor(private readonly door: CredentialsService) {}

  async forHttp(req: FastifyRequest, reply: FastifyReply): Promise<GqlContext> {
    assertNotCsrf(req);
    const q = (req.query as Record<string, unknown> | undefined)?.api_key;
    const answer = await this.door.authenticate({
      authorization: single(req.headers.authorization),
      apiKey: single(req.headers['x-api-key']),
      queryApiKey: req.method === 'GET' && typeof q === 'string' ? q : undefined,
      address: req.ip,
      requestId: req.id,
    });
    let caller: MaybeCaller;
    switch (answer.kind) {
      case 'invalid':
        throw invalidCredentials();
      case 'throttled':
        throw graphqlRateLimited(TOO_MANY_FAILURES, answer.throttle.resetMs, {
          limit: answer.throttle.limit,
          hit: { ...answer.throttle, allowed: false },
        });
      case 'caller':
        caller = answer.caller;
        break;
      case 'anonymous':
        break;
    }
    // the request's log line names its caller, as for REST (src/http/logging.ts)
    (req as FastifyRequest & { caller?: MaybeCaller }).caller = caller;
    return {
      transport: 'http',
      caller,
      loaders: new LoaderRegistry(),
      responseSize: new ResponseSize(MAX_RESPONSE_BYTES),
      req,
      reply,
      requestId: req.id,
    };
  }

  /** The door's answer for a WebSocket `connection_init` payload (see `socketCarrier`). */
  fromConnectionParams(
    params: Record<string, unknown> | undefined,
    address: string | undefined,
  ): Promise<DoorAnswer> {
    return this.door.authenticate(socketCarrier(params, address));
  }

  /**
   * The context of one WebSocket operation. `rights` re-establishes the socket's caller: a
   * subscription asks it again before each event (`refreshCaller`, see current-rights.ts).
   */
  forSocket(
    caller: MaybeCaller,
    connectionParams?: Record<string, unknown>,
    rights?: { current(): Promise<MaybeCaller> },
  ): GqlContext {
    // no DataLoader cache: a subscription's context lives across events and must not serve stale rows
    return {
      transport: 'ws',
      caller,
      loaders: new LoaderRegistry(false),
      connectionParams,
      ...(rights ? { refreshCaller: () => rights.current() } : {}),
    };
  }
}
