import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import {
  browserSkipReason,
  browserTestsRun,
  LAN_NAME,
  launchChromium,
} from './helpers/chromium.js';
import { createUser, type CreatedUser } from './helpers/factories.js';
import { request } from './helpers/http.js';

/** Where the screenshots of the page go (kept for a person to look at). */
const SHOTS = process.env.SWAGGER_UI_SCREENSHOTS ?? join(tmpdir(), 'atrium-swagger-ui-screenshots');

describe('Swagger UI over HTTP', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('lists a relative server, so that calls go to the address the document was read from', async () => {
    const doc = await request(t.url, '/api/docs-json');
    expect(doc.status).toBe(200);
    expect(doc.body.servers).toEqual([
      { url: '/', description: expect.stringMatching(/address the document was read/) },
    ]);
    expect(JSON.stringify(doc.body.servers)).not.toContain(new URL(PUBLIC_URL).host);
  });

  it('serves the page with a same-origin policy that upgrades nothing to https', async () => {
    const page = await request(t.url, '/api/docs', { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    const directives = new Map(
      csp.split(';').map((d) => {
        const [name = '', ...values] = d.trim().split(/\s+/);
        return [name, values.join(' ')] as const;
      }),
    );
    expect(directives.has('upgrade-insecure-requests')).toBe(false);
    expect(directives.get('default-src')).toBe("'self'");
    expect(directives.get('connect-src')).toBe("'self'");
    expect(directives.get('script-src')).toBe("'self'");
    expect(directives.get('font-src')).toBe("'self' data:");
    expect(csp).not.toMatch(/https?:/);
    // the page's scripts are files (script-src 'self' without 'unsafe-inline')
    for (const [, attrs, body] of page.text.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)) {
      expect(body.trim()).toBe('');
      expect(attrs).toMatch(/src=/);
    }
  });
});

// CI installs Chromium (.ci/run): there a missing browser fails the suite instead of skipping it
describe.skipIf(!browserTestsRun)(
  `Swagger UI in headless Chromium, from whatever address it is opened at${browserSkipReason}`,
  () => {
    let t: TestApp;
    let user: CreatedUser;
    let browser: Browser;
    let port: string;

    beforeAll(async () => {
      t = await startApp();
      user = await createUser(t.url);
      port = new URL(t.url).port;
      browser = await launchChromium({ lanName: true });
      mkdirSync(SHOTS, { recursive: true });
    });

    afterAll(async () => {
      await browser?.close();
      await t?.close();
    });

    /** A context whose network is cut to `origin`: anything else is aborted and recorded. */
    async function contextFor(origin: string, elsewhere: string[]): Promise<BrowserContext> {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      await context.route('**', async (route) => {
        const url = new URL(route.request().url());
        if (url.origin === origin) {
          await route.continue();
        } else {
          elsewhere.push(url.href);
          await route.abort('internetdisconnected');
        }
      });
      return context;
    }

    for (const host of ['127.0.0.1', 'localhost', LAN_NAME]) {
      for (const scheme of ['bearer', 'basic'] as const) {
        it(`runs an authorized GET /api/v1/auth/me (${scheme}) from http://${host}:PORT/api/docs`, async () => {
          const origin = `http://${host}:${port}`;
          const elsewhere: string[] = [];
          const problems: string[] = [];
          const sent: string[] = [];
          const madeUp: string[] = [];
          const context = await contextFor(origin, elsewhere);
          try {
            const page = await context.newPage();
            page.on('console', (msg) => {
              if (msg.type() === 'error') {
                problems.push(msg.text());
              }
            });
            page.on('pageerror', (err) => problems.push(err.message));
            page.on('request', (req) => {
              if (new URL(req.url()).pathname === '/api/v1/auth/me') {
                sent.push(`${new URL(req.url()).origin} ${req.headers().authorization ?? ''}`);
                // "Try it out" must not fill optional headers with made-up values (an example ETag)
                madeUp.push(...['if-none-match', 'if-match'].filter((h) => h in req.headers()));
              }
            });
            await page.goto(`${origin}/api/docs`);
            await page.locator('.swagger-ui .info .title').waitFor();

            await page.locator('button.btn.authorize').first().click();
            const modal = page.locator('.dialog-ux .modal-ux');
            await modal.waitFor();
            const section = modal.locator('.auth-container').filter({
              has: page.locator('h4 code', { hasText: new RegExp(`^${scheme}$`) }),
            });
            if (scheme === 'bearer') {
              await section.locator('#auth-bearer-value').fill(user.token);
            } else {
              await section.locator('#auth-basic-username').fill(user.email);
              await section.locator('#auth-basic-password').fill(user.password);
            }
            await section.locator('button.authorize[type="submit"]').click();
            await section.locator('button', { hasText: 'Logout' }).waitFor();
            await section.locator('button.btn-done').click();
            await modal.waitFor({ state: 'detached' });

            const operation = page.locator('.opblock-get', {
              has: page.locator('.opblock-summary-path[data-path="/api/v1/auth/me"]'),
            });
            await operation.locator('.opblock-summary').first().click();
            await operation.getByRole('button', { name: 'Try it out' }).click();
            await operation.getByRole('button', { name: 'Execute' }).click();
            const status = operation.locator(
              '.live-responses-table .response .response-col_status',
            );
            await expect.poll(() => status.first().innerText(), { timeout: 10_000 }).toBe('200');
            const body = operation.locator('.live-responses-table .response-col_description pre');
            await expect.poll(() => body.first().innerText()).toContain(`"id": "${user.id}"`);
            await status.first().scrollIntoViewIfNeeded();
            await page.screenshot({ path: join(SHOTS, `swagger-ui-${host}-${scheme}.png`) });

            const expected =
              scheme === 'bearer'
                ? `Bearer ${user.token}`
                : `Basic ${Buffer.from(`${user.email}:${user.password}`).toString('base64')}`;
            expect(sent).toEqual([`${origin} ${expected}`]);
            expect(madeUp).toEqual([]);
            expect(elsewhere).toEqual([]);
            // over plain http on a name that is not loopback, Chromium says it ignores the
            // Cross-Origin-Opener-Policy header (meant for https); anything else is a failure
            expect(
              problems.filter(
                (p) => !/^The Cross-Origin-Opener-Policy header has been ignored/.test(p),
              ),
            ).toEqual([]);
          } finally {
            await context.close();
          }
        });
      }
    }
  },
);
