import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { withOfflineApp } from './boot-offline.js';

/**
 * `npm run openapi:write [file]`: builds the application exactly as it serves (in-memory SQLite, no
 * network, not listening) and writes the OpenAPI document it serves at `/api/docs-json` to
 * `openapi.json` (or `file`). Redocly lints that file and openapi-typescript generates the test
 * client's types from it (docs/openapi.md).
 */
await withOfflineApp({}, async (app) => {
  const target = resolve(process.argv[2] ?? 'openapi.json');
  // the document exactly as served, through Fastify's request injection (no socket)
  const res = await app.getHttpAdapter().getInstance().inject({ url: '/api/docs-json' });
  if (res.statusCode !== 200) {
    throw new Error(`GET /api/docs-json answered ${res.statusCode}: ${res.body}`);
  }
  writeFileSync(target, `${JSON.stringify(JSON.parse(res.body), null, 2)}\n`);
  console.log(`wrote ${target}`);
});
