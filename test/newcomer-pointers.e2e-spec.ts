import type { DestinationStream } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { request } from './helpers/http.js';

type Line = Record<string, unknown> & { level: number; msg?: string };

/** The application's log output, line by line. */
class CapturedLog implements DestinationStream {
  readonly lines: Line[] = [];

  write(chunk: string): void {
    for (const text of chunk.split('\n')) {
      if (text !== '') {
        this.lines.push(JSON.parse(text) as Line);
      }
    }
  }
}

const noAdminLines = (log: CapturedLog) =>
  log.lines.filter((l) => /No ADMIN exists/.test(l.msg ?? ''));

describe('GET / and GET /api/v1 point a newcomer at the docs', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers / and /api/v1 with JSON links to /api/docs, /api/docs-json and /graphql that resolve', async () => {
    for (const path of ['/', '/api/v1']) {
      const res = await request(t.url, path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toMatch(/^application\/json/);
      expect(res.body, path).toEqual({
        name: 'Atrium',
        links: {
          docs: '/api/docs',
          openapi: '/api/docs-json',
          graphql: '/graphql',
          rest: '/api/v1',
        },
      });
    }
    const docs = await request(t.url, '/api/docs');
    expect(docs.status).toBe(200);
    const document = await request(t.url, '/api/docs-json');
    expect(document.status).toBe(200);
    const paths = Object.keys((document.body as { paths: Record<string, unknown> }).paths);
    expect(paths).toEqual(expect.arrayContaining(['/', '/api/v1']));
  });
});

describe('boot without an ADMIN', () => {
  it('logs one warning naming ADMIN_EMAIL and ADMIN_PASSWORD when no ADMIN exists, none when one does', async () => {
    const bare = new CapturedLog();
    const first = await startApp(
      { LOG_LEVEL: 'info', ADMIN_EMAIL: undefined, ADMIN_PASSWORD: undefined },
      { logDestination: bare },
    );
    await first.close();
    const lines = noAdminLines(bare);
    expect(lines).toHaveLength(1);
    expect(lines[0].level).toBe(40); // warn
    expect(lines[0].msg).toMatch(/ADMIN_EMAIL.*ADMIN_PASSWORD/);

    const withAdmin = new CapturedLog();
    const second = await startApp({ LOG_LEVEL: 'info' }, { logDestination: withAdmin });
    await second.close();
    expect(noAdminLines(withAdmin)).toHaveLength(0);
  });
});
