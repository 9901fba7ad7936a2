import { FastifyAdapter } from '@nestjs/platform-fastify';
import { describe, expect, it } from 'vitest';
import { corsOptionsDelegate, skipCorsWithoutOrigin } from './cors.js';

const ORIGIN = 'https://app.example.com';

/** A bare adapter with one route; CORS enabled as app.factory.ts does when `cors` is set. */
async function adapterWithRoute(cors: boolean): Promise<FastifyAdapter> {
  const adapter = new FastifyAdapter();
  if (cors) {
    adapter.enableCors({ delegator: corsOptionsDelegate([ORIGIN]) });
  }
  adapter.getInstance().get('/thing', () => ({ ok: true }));
  await adapter.getInstance().ready();
  return adapter;
}

describe('skipCorsWithoutOrigin (the wrap of the Nest adapter private corsHook)', () => {
  it('finds the hook app.enableCors() registered: a rename in @nestjs/platform-fastify fails here', async () => {
    const adapter = await adapterWithRoute(true);
    expect(() => skipCorsWithoutOrigin(adapter)).not.toThrow();
    await adapter.close();
  });

  it('throws when there is no hook to wrap, instead of silently skipping nothing', async () => {
    const adapter = await adapterWithRoute(false);
    expect(() => skipCorsWithoutOrigin(adapter)).toThrow(/no corsHook/);
    await adapter.close();
  });

  it('answers a request without Origin with Vary: Origin only, and one with Origin through @fastify/cors', async () => {
    const adapter = await adapterWithRoute(true);
    skipCorsWithoutOrigin(adapter);
    const fastify = adapter.getInstance();
    const plain = await fastify.inject({ method: 'GET', url: '/thing' });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers.vary).toBe('Origin');
    expect(Object.keys(plain.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);

    const browser = await fastify.inject({
      method: 'GET',
      url: '/thing',
      headers: { origin: ORIGIN },
    });
    expect(browser.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(browser.headers['access-control-allow-credentials']).toBe('true');
    expect(browser.headers.vary).toBe('Origin');
    await adapter.close();
  });
});
