import type { IncomingMessage } from 'node:http';
import type { Params } from 'nestjs-pino';
import type { AppConfig } from '../config/config.js';

/** The URL as logged: an `api_key` in the query is a credential and never reaches the logs. */
export function redactUrl(url: string | undefined): string | undefined {
  return url?.replace(/([?&]api_key=)[^&]*/gi, '$1[redacted]');
}

/**
 * Structured JSON logs (pino): one line per request with its id; headers are not logged at all, so
 * Authorization, X-API-Key and cookies cannot leak; bodies (passwords) are never logged.
 */
export function loggerOptions(config: AppConfig): Params {
  return {
    pinoHttp: {
      level: config.logLevel,
      // Fastify generated the id already (see app.factory.ts) and left it on the raw request
      genReqId: (req: IncomingMessage) => (req as IncomingMessage & { id: string }).id,
      customAttributeKeys: { reqId: 'request_id' },
      quietReqLogger: true,
      autoLogging: { ignore: (req: IncomingMessage) => req.url?.startsWith('/health/') ?? false },
      serializers: {
        req: (req: { id: string; method: string; url: string; remoteAddress?: string }) => ({
          id: req.id,
          method: req.method,
          url: redactUrl(req.url),
          remoteAddress: req.remoteAddress,
        }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      redact: {
        paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie', '*.password'],
        censor: '[redacted]',
      },
    },
  };
}
