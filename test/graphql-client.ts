import { DataSource } from 'typeorm';
import type { TestApp } from './helpers/app.js';
import { request, type Credentials, type TestResponse } from './helpers/http.js';

export interface GqlBody {
  data?: any;
  errors?: {
    message: string;
    path?: (string | number)[];
    locations?: unknown[];
    extensions?: {
      code?: string;
      details?: { field?: string; index?: number; message: string }[];
      [k: string]: unknown;
    };
  }[];
  extensions?: { cost?: { requested: number; limit: number; [k: string]: unknown } };
}

export interface GqlOptions {
  auth?: Credentials;
  variables?: Record<string, unknown>;
  operationName?: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Extra query string for GET (e.g. api_key). */
  query?: Record<string, string>;
}

/** One GraphQL operation over HTTP against /graphql (POST JSON by default, or GET). */
export async function gql(
  base: string,
  query: string,
  opts: GqlOptions = {},
): Promise<TestResponse<GqlBody>> {
  if (opts.method === 'GET') {
    const params = new URLSearchParams({ query, ...opts.query });
    if (opts.variables) {
      params.set('variables', JSON.stringify(opts.variables));
    }
    if (opts.operationName) {
      params.set('operationName', opts.operationName);
    }
    return request<GqlBody>(base, `/graphql?${params.toString()}`, {
      method: 'GET',
      auth: opts.auth,
      headers: opts.headers,
    });
  }
  return request<GqlBody>(base, '/graphql', {
    method: 'POST',
    auth: opts.auth,
    headers: opts.headers,
    body: { query, variables: opts.variables, operationName: opts.operationName },
  });
}

export function codes(body: GqlBody): (string | undefined)[] {
  return (body.errors ?? []).map((e) => e.extensions?.code);
}

/**
 * Counts the SQL statements the app sends to the database (every statement of either driver passes
 * TypeORM's logger hook `logQuery`, whether logging is enabled or not).
 */
export function sqlCounter(t: TestApp) {
  const ds = t.app.get(DataSource);
  const logger = ds.logger;
  const original = logger.logQuery.bind(logger);
  const statements: string[] = [];
  logger.logQuery = (query, parameters, queryRunner) => {
    // the webhook engine's background passes (src/webhooks/) are no request's statements
    if (/\bwebhook_(events|deliveries|endpoints)\b/.test(query)) {
      return original(query, parameters, queryRunner);
    }
    statements.push(query);
    return original(query, parameters, queryRunner);
  };
  return {
    statements,
    reset: () => {
      statements.length = 0;
    },
    restore: () => {
      logger.logQuery = original;
    },
  };
}
