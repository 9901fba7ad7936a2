import { constants } from 'node:zlib';
import fastifyCompress, { type FastifyCompressOptions } from '@fastify/compress';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

/**
 * Response compression (docs/deployment.md, "Compression"): brotli or gzip, whichever the client
 * ranks higher in `Accept-Encoding`, for an answer of at least 1 KiB and for every stream (the
 * exports, whose length is unknown); smaller answers go out as they are, since compressing a few
 * hundred bytes costs more CPU than it saves on the wire. Brotli at quality 4: its default (11) is
 * meant for static files and takes tens of milliseconds on a large JSON answer.
 */
const OPTIONS: FastifyCompressOptions = {
  global: true,
  threshold: 1024,
  encodings: ['br', 'gzip'],
  // JSON (also `application/problem+json`, GraphQL's media types), NDJSON and CSV exports, text,
  // the IDE and Swagger UI scripts; never server-sent events (each event must leave at once)
  customTypes:
    /^(?:text\/(?!event-stream)|application\/(?:[\w.-]+\+)?json|application\/x-ndjson|application\/javascript)/,
  brotliOptions: { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } },
  zlibOptions: { level: 6 },
};

/**
 * Registers @fastify/compress for every route registered after it (it works through `onRoute`, so
 * call this before Nest, Swagger UI, GraphQL and OAuth add their routes). Request bodies are left
 * alone: the plugin would also inflate `Content-Encoding: gzip` request bodies, which the API has
 * never accepted and no client needs.
 */
export async function registerCompression(app: NestFastifyApplication): Promise<void> {
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRoute', (route) => {
      route.decompress ??= false;
    });
  await app.register(fastifyCompress, OPTIONS);
}
