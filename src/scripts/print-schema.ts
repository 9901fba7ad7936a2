import 'reflect-metadata';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { GraphQLSchemaHost } from '@nestjs/graphql';
import { lexicographicSortSchema } from 'graphql';
import { createApp } from '../app.factory.js';
import { loadConfig } from '../config/config.js';

/**
 * `npm run schema:print`: builds the application exactly as it serves (in-memory SQLite, no network)
 * and writes the schema, with its directive uses (`@auth`, `@cacheControl`, `@deprecated`...), to
 * `schema.graphql` at the repository root. Commit the result.
 */
const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
  type: 'pkcs8',
  format: 'pem',
});
const config = loadConfig({
  NODE_ENV: 'production',
  DATABASE_URL: 'sqlite::memory:',
  JWT_PRIVATE_KEY: key as string,
  LOG_LEVEL: 'warn',
  GRAPHQL_INTROSPECTION: 'true',
});
const app = await createApp(config);
try {
  const schema = lexicographicSortSchema(app.get(GraphQLSchemaHost).schema);
  const target = resolve(process.argv[2] ?? 'schema.graphql');
  writeFileSync(target, `${printSchemaWithDirectives(schema).trim()}\n`);
  console.log(`wrote ${target}`);
} finally {
  await app.close();
}
