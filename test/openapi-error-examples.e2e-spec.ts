import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { request } from './helpers/http.js';

interface Envelope {
  example?: {
    error?: { code?: string; message?: string; details?: unknown[]; request_id?: string };
  };
  properties: { error: { properties: Record<string, { enum?: string[]; example?: unknown }> } };
}

/**
 * Swagger UI shows an error envelope's `example` (or one it builds from the members' examples, which
 * gave every status the email detail of a 422): each status gets its own, in the server's words.
 */
describe('OpenAPI error examples', () => {
  let t: TestApp;
  let envelopes: [string, Envelope][];

  beforeAll(async () => {
    t = await startApp();
    const doc = (await request(t.url, '/api/docs-json')).body as {
      components: { schemas: Record<string, Envelope> };
    };
    envelopes = Object.entries(doc.components.schemas).filter(
      ([name, s]) => name.endsWith('Error') && s.properties?.error !== undefined,
    );
  });
  afterAll(async () => {
    await t.close();
  });

  it('every error envelope has a whole example whose code is one of its status codes', () => {
    expect(envelopes.length).toBeGreaterThanOrEqual(14);
    for (const [name, schema] of envelopes) {
      const example = schema.example?.error;
      expect(example, name).toBeDefined();
      expect(schema.properties.error.properties.code?.enum, name).toContain(example?.code);
      expect(typeof example?.message, name).toBe('string');
      expect(schema.properties.error.properties.message?.example, name).toBe(example?.message);
    }
  });

  it('only the 400 and 422 examples carry details, only 5xx a request_id, and no two statuses share a message', () => {
    const byName = Object.fromEntries(envelopes.map(([n, s]) => [n, s.example?.error]));
    for (const [name, example] of Object.entries(byName)) {
      const detailed = name === 'BadRequestError' || name === 'UnprocessableEntityError';
      expect(example?.details !== undefined, name).toBe(detailed);
      const serverError = name === 'InternalServerErrorError' || name === 'ServiceUnavailableError';
      expect(example?.request_id !== undefined, name).toBe(serverError);
    }
    expect(byName.UnauthorizedError).toEqual({
      code: 'unauthorized',
      message: 'Authentication required',
    });
    expect(byName.NotFoundError?.code).toBe('not_found');
    expect(byName.TooManyRequestsError?.code).toBe('rate_limited');
    const messages = Object.values(byName).map((e) => e?.message);
    expect(new Set(messages).size).toBe(messages.length);
  });
});
