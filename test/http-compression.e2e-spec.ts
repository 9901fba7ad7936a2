import { get } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { tokenFor } from './helpers/factories.js';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The bytes on the wire (still compressed). */
  wire: Buffer;
}

/** A GET that shows the bytes as sent (fetch would decompress them and hide the encoding). */
function rawGet(base: string, path: string, headers: Record<string, string>): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = get(new URL(path, base), { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, wire: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

function decoded(res: Raw): string {
  const encoding = res.headers['content-encoding'];
  if (encoding === 'br') {
    return brotliDecompressSync(res.wire).toString('utf8');
  }
  if (encoding === 'gzip') {
    return gunzipSync(res.wire).toString('utf8');
  }
  return res.wire.toString('utf8');
}

describe('response compression', () => {
  let t: TestApp;
  let bearer: string;
  beforeAll(async () => {
    t = await startApp();
    bearer = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
  });
  afterAll(async () => {
    await t.close();
  });

  it('sends the OpenAPI document as brotli or gzip as the client asks (the same JSON decoded), an answer under 1 KiB as it is', async () => {
    const plain = await rawGet(t.url, '/api/docs-json', {});
    expect(plain.headers['content-encoding']).toBeUndefined();
    const br = await rawGet(t.url, '/api/docs-json', { 'accept-encoding': 'gzip, deflate, br' });
    const gzip = await rawGet(t.url, '/api/docs-json', { 'accept-encoding': 'gzip' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(gzip.headers['content-encoding']).toBe('gzip');
    for (const res of [br, gzip]) {
      expect(res.status).toBe(200);
      expect(String(res.headers.vary)).toMatch(/accept-encoding/i);
      expect(JSON.parse(decoded(res))).toEqual(JSON.parse(plain.wire.toString('utf8')));
      expect(res.wire.length).toBeLessThan(plain.wire.length / 5);
    }
    // under the 1 KiB threshold: as it is, although the client accepts both
    const small = await rawGet(t.url, '/api/v1/users?limit=1', {
      authorization: `Bearer ${bearer}`,
      'accept-encoding': 'gzip, br',
    });
    expect(small.status).toBe(200);
    expect(small.wire.length).toBeLessThan(1024);
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(small.wire.toString('utf8')).data).toHaveLength(1);
  });

  it('compresses a streamed export and a large GraphQL answer, and keeps ETag/304 on compressed GETs', async () => {
    const auth = { authorization: `Bearer ${bearer}` };
    const exported = await rawGet(t.url, '/api/v1/users/export', {
      ...auth,
      accept: 'application/x-ndjson',
      'accept-encoding': 'gzip',
    });
    expect(exported.status).toBe(200);
    expect(exported.headers['content-encoding']).toBe('gzip');
    const lines = decoded(exported).trim().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { email: string }).email)).toContain(ADMIN_EMAIL);

    const query = encodeURIComponent('{ __schema { types { name description fields { name } } } }');
    const graphql = await rawGet(t.url, `/graphql?query=${query}`, {
      ...auth,
      accept: 'application/json',
      'accept-encoding': 'br',
    });
    expect(graphql.headers['content-encoding']).toBe('br');
    expect(JSON.parse(decoded(graphql)).data.__schema.types.length).toBeGreaterThan(30);

    const list = await rawGet(t.url, '/api/v1/users?limit=50', {
      ...auth,
      'accept-encoding': 'gzip',
    });
    const etag = String(list.headers.etag);
    expect(etag).toMatch(/^"/);
    const again = await rawGet(t.url, '/api/v1/users?limit=50', {
      ...auth,
      'accept-encoding': 'gzip',
      'if-none-match': etag,
    });
    expect(again.status).toBe(304);
    expect(again.wire.length).toBe(0);
  });
});
