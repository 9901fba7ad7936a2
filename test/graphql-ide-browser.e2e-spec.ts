import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import {
  browserSkipReason,
  browserTestsRun,
  LAN_NAME,
  launchChromium,
} from './helpers/chromium.js';
import { createUser, unique, type CreatedUser } from './helpers/factories.js';
import { request } from './helpers/http.js';
import { listening } from './subscriptions-helpers.js';
import { EventsService, TOPICS } from '../src/events/events.service.js';

/** Where the screenshot of the page goes (kept for a person to look at). */
const SHOTS =
  process.env.GRAPHQL_IDE_SCREENSHOTS ?? join(tmpdir(), 'atrium-graphql-ide-screenshots');

describe('the GraphQL page over HTTP', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ GRAPHQL_DEVELOPMENT: 'true' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('serves GraphiQL from the app itself, with same-origin scripts only and no inline script', async () => {
    const res = await request(t.url, '/graphql', { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    expect(csp).not.toMatch(/https?:/);
    expect(csp).toContain("connect-src 'self'");
    // every script is a same-origin file: no inline code, no other host
    const scripts = [...res.text.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attrs, body] of scripts) {
      expect(body.trim()).toBe('');
      expect(attrs).toMatch(/src="graphql-ide\/[\w.-]+\.js"/);
    }
    expect(res.text).not.toMatch(/https?:\/\//);
    expect(res.text).toMatch(/localStorage/);
    for (const src of res.text.matchAll(/(?:src|href)="(graphql-ide\/[\w.-]+)"/g)) {
      const file = await request(t.url, `/${src[1]}`);
      expect(file.status, src[1]).toBe(200);
      expect(file.text.length, src[1]).toBeGreaterThan(0);
      const again = await request(t.url, `/${src[1]}`, {
        headers: { 'if-none-match': file.headers.get('etag')! },
      });
      expect(again.status, src[1]).toBe(304);
    }
  });

  it('serves only its fixed list of assets', async () => {
    for (const path of [
      '/graphql-ide/package.json',
      '/graphql-ide/..%2Fpackage.json',
      '/graphql-ide/graphiql.min.js.map',
    ]) {
      const res = await request(t.url, path);
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  it('serves no page and no assets outside development', async () => {
    const prod = await startApp({ GRAPHQL_DEVELOPMENT: 'false' });
    try {
      const page = await request(prod.url, '/graphql', { headers: { accept: 'text/html' } });
      expect(page.headers.get('content-type') ?? '').not.toContain('text/html');
      expect((await request(prod.url, '/graphql-ide/graphiql.min.js')).status).toBe(404);
    } finally {
      await prod.close();
    }
  });
});

// CI installs Chromium (.ci/run): there a missing browser fails the suite instead of skipping it
describe.skipIf(!browserTestsRun)(
  `the GraphQL page in headless Chromium with no network but the app${browserSkipReason}`,
  () => {
    let t: TestApp;
    let user: CreatedUser;
    let browser: Browser;
    let page: Page;
    const elsewhere: string[] = [];
    const problems: string[] = [];

    beforeAll(async () => {
      t = await startApp({ GRAPHQL_DEVELOPMENT: 'true' });
      user = await createUser(t.url);
      browser = await launchChromium();
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const app = new URL(t.url).host;
      // the network is cut to the app: any other request is aborted and recorded
      await context.route('**', async (route) => {
        const url = new URL(route.request().url());
        if (url.host === app) {
          await route.continue();
        } else {
          elsewhere.push(url.href);
          await route.abort('internetdisconnected');
        }
      });
      page = await context.newPage();
      page.on('console', (msg) => {
        if (msg.type() === 'error') {
          problems.push(msg.text());
        }
      });
      page.on('pageerror', (err) => problems.push(err.message));
      mkdirSync(SHOTS, { recursive: true });
    });

    afterAll(async () => {
      await browser?.close();
      await t?.close();
    });

    it('loads, introspects the schema, and runs { me { id } } with a pasted token kept out of localStorage', async () => {
      await page.goto(`${t.url}/graphql`);
      await page.locator('.graphiql-container').waitFor();
      await expect(page.locator('#atrium-notice').innerText()).resolves.toMatch(
        /memory only.*localStorage/,
      );

      // introspection: the documentation explorer lists the root types of the schema
      await page.getByRole('button', { name: /documentation explorer/i }).click();
      await page.locator('.graphiql-doc-explorer').getByText('Query', { exact: true }).waitFor();
      await page.locator('.graphiql-doc-explorer').getByText('Mutation', { exact: true }).waitFor();

      // paste the token into the Headers editor and run the default query
      await page.locator('button[data-name="headers"]').click();
      await page.locator('.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror').click();
      await page.keyboard.insertText(`{"Authorization": "Bearer ${user.token}"}`);
      await page.getByRole('button', { name: /execute query/i }).click();
      const response = page.locator('.graphiql-response');
      await expect
        .poll(() => response.innerText(), { timeout: 10_000 })
        .toContain(`"id": "${user.id}"`);

      await page.screenshot({ path: join(SHOTS, 'graphiql.png') });

      const stored = await page.evaluate<string>('JSON.stringify({ ...localStorage })');
      expect(stored).not.toContain(user.token);
      expect(stored).not.toMatch(/graphiql/);
      expect(elsewhere).toEqual([]);
      expect(problems.filter((p) => /Content Security Policy|Refused to/i.test(p))).toEqual([]);
    });
  },
);

/** A host name that is not loopback (no secure-context exemption): mapped to the app by Chromium. */

describe.skipIf(!browserTestsRun)(
  `GraphiQL subscriptions in headless Chromium, from whatever address the page was opened at${browserSkipReason}`,
  () => {
    let t: TestApp;
    let user: CreatedUser;
    let browser: Browser;
    let port: string;

    beforeAll(async () => {
      t = await startApp({ GRAPHQL_DEVELOPMENT: 'true' });
      user = await createUser(t.url);
      port = new URL(t.url).port;
      browser = await launchChromium({ lanName: true });
      mkdirSync(SHOTS, { recursive: true });
    });

    afterAll(async () => {
      await browser?.close();
      await t?.close();
    });

    for (const host of ['127.0.0.1', 'localhost', LAN_NAME]) {
      it(`runs a query over HTTP and a subscription over graphql-transport-ws with the Headers pane as connection_init (http://${host}:PORT)`, async () => {
        const origin = `http://${host}:${port}`;
        const room = await user.client.post('/api/v1/rooms', { name: unique('ide-room-') });
        expect(room.status).toBe(201);
        const roomId = room.body.data.id as string;

        const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
        const elsewhere: string[] = [];
        const problems: string[] = [];
        const httpOperations: string[] = [];
        const sockets: { url: string; sent: string[]; received: string[]; closed: boolean }[] = [];
        // the network is cut to the page's origin: any other request is aborted and recorded
        await context.route('**', async (route) => {
          const url = new URL(route.request().url());
          if (url.origin === origin) {
            await route.continue();
          } else {
            elsewhere.push(url.href);
            await route.abort('internetdisconnected');
          }
        });
        try {
          const page = await context.newPage();
          page.on('console', (msg) => {
            if (msg.type() === 'error') {
              problems.push(msg.text());
            }
          });
          page.on('pageerror', (err) => problems.push(err.message));
          page.on('request', (req) => {
            if (new URL(req.url()).pathname === '/graphql' && req.method() === 'POST') {
              httpOperations.push(req.postData() ?? '');
            }
          });
          page.on('websocket', (ws) => {
            const socket = {
              url: ws.url(),
              sent: [] as string[],
              received: [] as string[],
              closed: false,
            };
            sockets.push(socket);
            ws.on('close', () => (socket.closed = true));
            ws.on('framesent', (f) => socket.sent.push(String(f.payload)));
            ws.on('framereceived', (f) => socket.received.push(String(f.payload)));
          });

          await page.goto(`${origin}/graphql`);
          await page.locator('.graphiql-container').waitFor();
          await page.locator('button[data-name="headers"]').click();
          await page
            .locator('.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror')
            .click();
          await page.keyboard.insertText(`{"Authorization": "Bearer ${user.token}"}`);

          // the default query, over HTTP
          const run = page.getByRole('button', { name: /execute query/i });
          await run.click();
          const response = page.locator('.graphiql-response');
          await expect
            .poll(() => response.innerText(), { timeout: 10_000 })
            .toContain(`"id": "${user.id}"`);

          // a subscription typed in the editor, over WebSocket, fed by a message posted over REST
          await page.locator('.graphiql-query-editor .CodeMirror').click();
          await page.keyboard.press('Control+A');
          await page.keyboard.insertText(
            `subscription OnMessage {\n  messageAdded(roomId: "${roomId}") {\n    id\n    content\n  }\n}\n`,
          );
          await run.click();
          await listening(t, TOPICS.messageAdded(roomId));
          const content = `hello ${host} from REST`;
          const sent = await user.client.post(`/api/v1/rooms/${roomId}/messages`, { content });
          expect(sent.status).toBe(201);
          await expect
            .poll(() => response.innerText(), { timeout: 10_000 })
            .toContain(`"content": "${content}"`);
          await expect(response.innerText()).resolves.toContain(`"id": "${sent.body.data.id}"`);
          await page.screenshot({ path: join(SHOTS, `graphiql-subscription-${host}.png`) });

          // stopping the run ends the subscription on the server and closes the socket
          await page.locator('.graphiql-execute-button').click();
          await expect.poll(() => sockets[0]?.closed, { timeout: 5_000 }).toBe(true);
          await expect
            .poll(() => t.app.get(EventsService).listenerCount(TOPICS.messageAdded(roomId)))
            .toBe(0);

          // one socket to the page's own origin, whose connection_init carried the Headers pane
          expect(sockets.map((s) => s.url)).toEqual([`ws://${host}:${port}/graphql`]);
          const [init, subscribe] = sockets[0].sent.map((f) => JSON.parse(f));
          expect(init).toEqual({
            type: 'connection_init',
            payload: { Authorization: `Bearer ${user.token}` },
          });
          expect(subscribe).toMatchObject({
            type: 'subscribe',
            payload: { query: expect.stringContaining('messageAdded') },
          });
          expect(JSON.parse(sockets[0].received[0])).toEqual({ type: 'connection_ack' });
          // the query (and the schema's introspection) went over HTTP, the subscription did not
          expect(httpOperations.some((body) => /\bme\b/.test(body))).toBe(true);
          expect(httpOperations.some((body) => body.includes('messageAdded'))).toBe(false);
          expect(elsewhere).toEqual([]);
          expect(problems.filter((p) => /Content Security Policy|Refused to/i.test(p))).toEqual([]);
        } finally {
          await context.close();
        }
      });
    }
  },
);
