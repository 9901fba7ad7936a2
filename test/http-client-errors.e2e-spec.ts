import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { rawExchange, type RawResponse } from './helpers/raw-http.js';

function expectEnvelope(res: RawResponse, status: number, message: RegExp): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['x-request-id']).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  const body = JSON.parse(res.body) as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error.code).toBe('bad_request');
  expect(body.error.message).toMatch(message);
}

describe('errors answered by the HTTP layer are in the error envelope', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('400 for a malformed request line', async () => {
    const res = await rawExchange(t.url, 'GARBAGE\r\n\r\n');
    expectEnvelope(res, 400, /Malformed HTTP request/);
    expect(res.headers.connection).toBe('close');
  });

  it('400 for an invalid header', async () => {
    const res = await rawExchange(
      t.url,
      'GET /health/live HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n',
    );
    expectEnvelope(res, 400, /Malformed HTTP request/);
  });

  it('431 for headers over 16 KiB, and for a URL that long', async () => {
    const big = await rawExchange(
      t.url,
      `GET /api/v1/users HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expectEnvelope(big, 431, /exceed 16 KiB/);
    const longUrl = await rawExchange(
      t.url,
      `GET /api/v1/users?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    expectEnvelope(longUrl, 431, /exceed 16 KiB/);
  });

  it('414 for a path parameter longer than 100 characters, with the security headers', async () => {
    const res = await rawExchange(
      t.url,
      `GET /api/v1/users/usr_${'a'.repeat(200)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    expectEnvelope(res, 414, /path segment exceeds 100 characters/);
    expect(res.body).not.toContain('aaaa'); // the path is not echoed back
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('400 for a URL that does not percent-decode', async () => {
    const res = await rawExchange(
      t.url,
      'GET /api/v1/users/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    expectEnvelope(res, 400, /URL is not valid/);
  });
});
