import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { RequestMethod } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { GraphQLError } from 'graphql';
import type { DestinationStream } from 'pino';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { AppGuard } from './app.guard.js';
import { AppModule } from './app.module.js';
import { describeOAuthInOpenApi } from './auth/oauth/oauth-openapi.js';
import { registerOAuthRoutes } from './auth/oauth/oauth.routes.js';
import { HttpExceptionFilter } from './http/http-exception.filter.js';
import {
  clientErrorHandler,
  frameworkErrorHandler,
  MAX_PARAM_LENGTH,
  type HttpHookOptions,
  registerHttpHooks,
  rewriteUrl,
} from './http/http-hooks.js';
import { registerCompression } from './http/compression.js';
import { registerSwaggerUiScript, SWAGGER_UI_SCRIPT_PATH } from './http/swagger-ui-a11y.js';
import { corsOptionsDelegate, skipCorsWithoutOrigin } from './http/cors.js';
import { finishOpenApiDocument } from './common/openapi/document.js';
import { jsonShapeViolation, refusedBodyShape } from './http/json-shape.js';
import { QueryParamsCheck, queryParamsByRoute } from './http/query-params.js';
import {
  createRootLogger,
  PinoLoggerService,
  requestChildLogger,
  RequestLogController,
} from './http/logging.js';
import {
  SECURITY_HEADER_OPTIONS,
  addPageHeaders,
  apiSecurityHeaders,
  staticSecurityHeaders,
} from './http/security-headers.js';
import { ShutdownState } from './http/shutdown.js';
import { validationPipe } from './common/validation.js';
import type { AppConfig } from './config/config.js';
import { formatGraphqlError } from './graphql/format-error.js';
import { MetricsService } from './metrics/metrics.service.js';
import { registerIdempotencyHook } from './idempotency/idempotency.interceptor.js';
import {
  BUCKET_REQUESTS,
  rateLimitedError,
  RateLimitService,
  replySink,
  secondsUntil,
  writeRateLimitHeaders,
} from './rate-limit/rate-limit.service.js';
import { registerRouteUrl, routeUrl } from './common/route-url.js';
import { registerTraceHeaders } from './telemetry/http-trace.js';

const BODY_LIMIT = 1024 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** `X-Request-Id` taken from the request when well-formed, else generated. */
function genReqId(req: IncomingMessage): string {
  const header = req.headers['x-request-id'];
  const id = typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
  return id;
}

/** A request-level GraphQL error body (no data), formatted like Apollo's own BAD_REQUEST errors. */
function graphqlRequestError(message: string): string {
  const error = new GraphQLError(message, { extensions: { code: 'BAD_REQUEST' } });
  return JSON.stringify({ errors: [formatGraphqlError(error.toJSON(), error)] });
}

/** Options of an embedding (tests): where the JSON log lines go (default: stdout, buffered). */
export interface CreateAppOptions {
  logDestination?: DestinationStream;
}

/** Builds the whole application (not listening): used by main.ts and by every test. */
export async function createApp(
  config: AppConfig,
  options: CreateAppOptions = {},
): Promise<NestFastifyApplication> {
  const logger = createRootLogger(config, options.logDestination);
  // helmet's full set for HTML pages; every other answer gets the API set (docs/contract.md)
  const pageHeaders = staticSecurityHeaders(SECURITY_HEADER_OPTIONS);
  const securityHeaders = apiSecurityHeaders(pageHeaders);
  const limits = config.http;
  const adapter = new FastifyAdapter({
    // Timeouts (docs/limits.md). Node checks the header and request timeouts on an interval (30 s by
    // default, which let a half-sent request live ~90 s): check often enough for the configured value.
    http: {
      headersTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, limits.headersTimeoutMs / 4)),
    },
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler(securityHeaders),
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    loggerInstance: logger,
    logController: new RequestLogController({ requestIdLogLabel: 'request_id' }),
    childLoggerFactory: requestChildLogger,
    bodyLimit: BODY_LIMIT,
    genReqId,
    requestIdHeader: false,
    trustProxy: config.trustedProxies.length > 0 ? config.trustedProxies : false,
    rewriteUrl,
    // requests on an open keep-alive connection once closing begins get the error envelope instead
    // (http-hooks.ts)
    return503OnClosing: false,
  });
  const fastify = adapter.getInstance();
  const httpHooks: HttpHookOptions = {
    corsOrigins: config.corsOrigins,
    bodyShape: { maxDepth: limits.bodyMaxDepth, maxItems: limits.bodyMaxItems },
  };
  registerRouteUrl(fastify);
  registerTraceHeaders(fastify);
  registerHttpHooks(adapter, httpHooks);
  // GraphQL over HTTP answers a refused body shape in its own error shape (still 400)
  fastify.addHook('onSend', (req, _reply, payload, done) => {
    const reason = refusedBodyShape.get(req);
    if (reason !== undefined && req.url.split('?', 1)[0] === '/graphql') {
      done(null, graphqlRequestError(reason));
      return;
    }
    done(null, payload);
  });
  // GET /graphql carries its variables and extensions as JSON in the query string: same bounds
  const bodyShape = { maxDepth: limits.bodyMaxDepth, maxItems: limits.bodyMaxItems };
  fastify.addHook('onRequest', (req, reply, done) => {
    if (req.method !== 'GET' || routeUrl(req) !== '/graphql') {
      done();
      return;
    }
    const query = req.query as Record<string, unknown>;
    for (const name of ['variables', 'extensions']) {
      const value = query[name];
      const violation =
        typeof value === 'string' ? jsonShapeViolation(value, bodyShape) : undefined;
      if (violation !== undefined) {
        void reply
          .code(400)
          .header('Content-Type', 'application/json; charset=utf-8')
          .send(graphqlRequestError(violation.replace('JSON body', `JSON in \`${name}\``)));
        return;
      }
    }
    done();
  });

  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    logger: new PinoLoggerService(logger),
    abortOnError: false,
    // Fastify parses JSON itself (see http-hooks.ts); Nest's extra parsers would accept form bodies.
    bodyParser: false,
  });

  // unknown /api/... paths count against the client's request bucket like any refused request
  const rateLimits = app.get(RateLimitService);
  httpHooks.countUnrouted = async (req, reply) => {
    if (!rateLimits.enabled) {
      return;
    }
    // credentials are not verified for a path that does not exist: the address's bucket pays
    const { rateLimit: limit, rateLimitWindowS: windowS } = config;
    const hit = await rateLimits.hit(
      BUCKET_REQUESTS,
      rateLimits.ipTracker(req.ip),
      1,
      limit,
      windowS,
    );
    if (hit === undefined) {
      return; // store unavailable: fail open, as for routed requests
    }
    const sink = replySink(reply);
    writeRateLimitHeaders(sink, limit, hit);
    if (!hit.allowed) {
      sink('Retry-After', String(secondsUntil(hit.resetMs)));
      throw rateLimitedError(hit.resetMs);
    }
  };

  registerIdempotencyHook(fastify);
  const metrics = app.get(MetricsService);
  fastify.addHook('onResponse', (req, reply, done) => {
    metrics.recordHttp(
      req.method,
      routeUrl(req) ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
  // after the hooks above (their onSend sees the uncompressed answer: ETags, idempotent replays),
  // before any route is added (the plugin works through onRoute)
  await registerCompression(app);

  app.setGlobalPrefix('api/v1', {
    exclude: [
      { path: 'health/live', method: RequestMethod.GET },
      { path: 'health/ready', method: RequestMethod.GET },
      { path: 'metrics', method: RequestMethod.GET },
      // the pointers of src/health/api-index.controller.ts
      { path: '/', method: RequestMethod.GET },
      { path: 'api/v1', method: RequestMethod.GET },
    ],
  });
  app.useGlobalFilters(new HttpExceptionFilter());
  app.useGlobalPipes(validationPipe());
  // per-request options: an explicit origin gets credentials, `*` does not (src/http/cors.ts)
  app.enableCors({ delegator: corsOptionsDelegate(config.corsOrigins) });
  fastify.addHook('onRequest', (_req, reply, done) => {
    void reply.headers(securityHeaders);
    done();
  });
  fastify.addHook('onSend', addPageHeaders(pageHeaders));

  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Atrium resource API')
      .setDescription('Users, orders, posts, rooms and messages. See README.md for the rules.')
      .setVersion('1')
      // relative: Swagger UI and clients call the address they read the document at (docs/openapi.md)
      .addServer('/', 'This server, at the address the document was read from')
      .addBearerAuth()
      .addBasicAuth()
      .addApiKey({ type: 'apiKey', in: 'header', name: 'X-API-Key' }, 'api_key')
      .addApiKey(
        {
          type: 'apiKey',
          in: 'query',
          name: 'api_key',
          description:
            'An API key in the query (prefer X-API-Key: URLs end up in histories). Accepted on every /api route, ignored on public ones.',
        },
        'api_key_query',
      )
      .build(),
  );
  describeOAuthInOpenApi(document, config.publicUrl);
  finishOpenApiDocument(document);
  // the request guard refuses query parameters the document does not list (400)
  app.get(AppGuard).checkQueriesWith(new QueryParamsCheck(queryParamsByRoute(document)));
  // the page's accessibility fixes Swagger UI's options cannot make (src/http/swagger-ui-a11y.ts)
  registerSwaggerUiScript(fastify);
  SwaggerModule.setup('api/docs', app, document, {
    jsonDocumentUrl: 'api/docs-json',
    customJs: SWAGGER_UI_SCRIPT_PATH,
  });
  registerOAuthRoutes(app);

  // SIGTERM/SIGINT are handled by main.ts (src/http/shutdown.ts): drain, close, exit within the grace
  const shutdown = app.get(ShutdownState);
  httpHooks.draining = () => shutdown.draining;
  // @fastify/cors is registered as a plugin, loaded when Fastify gets ready (listen or inject)
  fastify.addHook('onReady', (done) => {
    try {
      skipCorsWithoutOrigin(adapter);
      done();
    } catch (err) {
      done(err as Error);
    }
  });
  await app.init();
  return app;
}
