import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp } from './helpers/app.js';
import { tokenFor } from './helpers/factories.js';
import type { Credentials } from './helpers/http.js';
import { codes, gql, type GqlBody } from './graphql-client.js';

/**
 * Error codes that need an app of their own (a broken database, a tiny rate limit). The apps run one
 * after the other: passport strategies are process-wide, so two live apps in one process would share them.
 */
describe('GraphQL errors that need their own app', () => {
  it('INTERNAL_SERVER_ERROR with a generic message (no SQL, no stack) when something breaks', async () => {
    const broken = await startApp();
    try {
      await broken.app.get(DataSource).query('DROP TABLE posts');
      const token = await tokenFor(broken.url, ADMIN_EMAIL, ADMIN_PASSWORD);
      const res = await gql(broken.url, '{ me { id } posts { id } }', { auth: { bearer: token } });
      expect(res.status).toBe(200);
      expect(res.body.data).toBeNull(); // posts is non-null: the null bubbles up
      expect(res.body.errors).toEqual([
        {
          message: 'Internal server error',
          locations: [{ line: 1, column: 13 }],
          path: ['posts'],
          extensions: { code: 'INTERNAL_SERVER_ERROR' },
        },
      ]);
      expect(res.text).not.toMatch(/SELECT|sqlite|relation|stack|QueryFailed/i);
    } finally {
      await broken.close();
    }
  });

  it('RATE_LIMITED once the caller exhausts its request budget', async () => {
    const limited = await startApp({ RATE_LIMIT: '3' });
    try {
      const auth: Credentials = { basic: [ADMIN_EMAIL, ADMIN_PASSWORD] };
      const statuses: number[] = [];
      const bodies: GqlBody[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await gql(limited.url, '{ me { id } }', { auth });
        statuses.push(res.status);
        bodies.push(res.body);
      }
      expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
      expect(statuses[4]).toBe(429);
      expect(codes(bodies[4] ?? {})).toEqual(['RATE_LIMITED']);
    } finally {
      await limited.close();
    }
  });
});
