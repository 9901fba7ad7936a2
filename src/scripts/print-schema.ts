import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { GraphQLSchemaHost } from '@nestjs/graphql';
import { lexicographicSortSchema } from 'graphql';
import { withOfflineApp } from './boot-offline.js';

/**
 * `npm run schema:print`: builds the application exactly as it serves (in-memory SQLite, no network)
 * and writes the schema, with its directive uses (`@auth`, `@cacheControl`, `@deprecated`...), to
 * `schema.graphql` at the repository root. Commit the result.
 */
await withOfflineApp({ GRAPHQL_INTROSPECTION: 'true' }, async (app) => {
  const schema = lexicographicSortSchema(app.get(GraphQLSchemaHost).schema);
  const target = resolve(process.argv[2] ?? 'schema.graphql');
  writeFileSync(target, `${printSchemaWithDirectives(schema).trim()}\n`);
  console.log(`wrote ${target}`);
});
