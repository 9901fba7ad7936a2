import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import { browserSkipReason, browserTestsRun, launchChromium } from './helpers/chromium.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import { authorizeUrl, pkcePair, registerClient } from './helpers/oauth.js';

const AXE = readFileSync('node_modules/axe-core/axe.min.js', 'utf8');
/** Screenshots of the pages checked (kept for a person to look at). */
const SHOTS = process.env.A11Y_SCREENSHOTS ?? join(tmpdir(), 'atrium-a11y-screenshots');

/**
 * What axe-core still finds in Swagger UI and GraphiQL themselves: their own markup and theme, which
 * the project does not own (docs/openapi.md "Accessibility of the developer pages" lists them for upstream).
 */
const UPSTREAM: Record<string, string[]> = {
  swagger: ['color-contrast', 'heading-order', 'nested-interactive'],
  graphiql: ['color-contrast', 'nested-interactive'],
};

interface Violation {
  id: string;
  impact: string;
  nodes: { target: string[]; html: string }[];
}

/** axe-core's violations on the page as it is now (`include`: only within these selectors). */
async function axe(page: Page, include?: string[]): Promise<Violation[]> {
  await page.evaluate(AXE); // evaluated, not a <script>: the pages' policies allow no inline script
  return page.evaluate(async (context) => {
    const run = (
      globalThis as unknown as {
        axe: { run: (c: unknown) => Promise<{ violations: Violation[] }> };
      }
    ).axe.run;
    const result = await run(
      context
        ? { include: context.map((s) => [s]) }
        : (globalThis as unknown as { document: unknown }).document,
    );
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      nodes: v.nodes.map((n) => ({ target: n.target, html: n.html.slice(0, 200) })),
    }));
  }, include ?? null);
}

const ids = (violations: Violation[]) => violations.map((v) => v.id).sort();

describe.skipIf(!browserTestsRun)(
  `accessibility of the developer pages (axe-core in headless Chromium)${browserSkipReason}`,
  () => {
    let t: TestApp;
    let user: CreatedUser;
    let browser: Browser;

    beforeAll(async () => {
      t = await startApp({ GRAPHQL_DEVELOPMENT: 'true' });
      user = await createUser(t.url);
      browser = await launchChromium();
      mkdirSync(SHOTS, { recursive: true });
    });
    afterAll(async () => {
      await browser?.close();
      await t?.close();
    });

    it('Swagger UI: the servers select is named, its title and servers bar are in landmarks; only upstream violations remain', async () => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${t.url}/api/docs`);
      await page.locator('.swagger-ui .info .title').waitFor();
      await expect.poll(() => page.locator('#servers').getAttribute('aria-label')).toBe('Server');
      await page.screenshot({ path: join(SHOTS, 'swagger-ui.png') });
      const violations = await axe(page);
      expect(ids(violations), JSON.stringify(violations)).not.toContain('select-name');
      expect(ids(violations)).not.toContain('region');
      for (const v of violations) {
        expect(UPSTREAM.swagger, JSON.stringify(v)).toContain(v.id);
      }
      await page.close();
    });

    it("GraphiQL: the project's banner and page structure have no violation, the editors are named; only upstream violations remain", async () => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${t.url}/graphql`);
      await page.locator('.graphiql-container').waitFor();
      await expect
        .poll(() => page.locator('.graphiql-query-editor textarea').getAttribute('aria-label'))
        .toBe('Query editor');
      await page.screenshot({ path: join(SHOTS, 'graphiql.png') });
      // what the project adds: the notice banner and its header
      expect(await axe(page, ['header'])).toEqual([]);
      const violations = await axe(page);
      for (const id of ['label', 'region', 'landmark-one-main', 'page-has-heading-one']) {
        expect(ids(violations), JSON.stringify(violations)).not.toContain(id);
      }
      for (const v of violations) {
        expect(UPSTREAM.graphiql, JSON.stringify(v)).toContain(v.id);
        expect(JSON.stringify(v.nodes)).not.toContain('atrium-notice');
      }
      await page.close();
    });

    it('OAuth sign-in after a wrong password: both fields aria-invalid, focus on the password, no violations', async () => {
      const partner = await registerClient(await adminClient(t.url), {
        name: 'Acme A11y',
        redirect_uris: ['http://127.0.0.1:9/callback'],
        scopes: ['openid', 'users:read'],
      });
      const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
      // PUBLIC_URL's host is not resolvable: its requests go to the app
      await context.route(`${PUBLIC_URL}/**`, async (route) => {
        const url = new URL(route.request().url());
        await route.continue({ url: `${t.url}${url.pathname}${url.search}` });
      });
      try {
        const page = await context.newPage();
        const { challenge } = pkcePair();
        const start = `${t.url}${authorizeUrl({
          client_id: partner.client_id,
          response_type: 'code',
          redirect_uri: partner.redirect_uris[0],
          scope: 'openid users:read',
          state: 'a11y',
          code_challenge: challenge,
          code_challenge_method: 'S256',
        })}`;
        await page.goto(start);
        await page.getByRole('heading', { name: 'Sign in' }).waitFor();
        expect(await page.getByLabel('Email').getAttribute('aria-invalid')).toBeNull();
        await page.getByLabel('Email').fill(user.email);
        await page.getByLabel('Password').fill('certainly-not-the-password');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/do not match/);
        await page.screenshot({ path: join(SHOTS, 'oauth-wrong-password.png'), fullPage: true });
        expect(await page.getByLabel('Email').getAttribute('aria-invalid')).toBe('true');
        expect(await page.getByLabel('Password').getAttribute('aria-invalid')).toBe('true');
        expect(
          await page.evaluate(
            () =>
              (globalThis as unknown as { document: { activeElement?: { id: string } } }).document
                .activeElement?.id,
          ),
        ).toBe('password');
        expect(await axe(page)).toEqual([]);
      } finally {
        await context.close();
      }
    });
  },
);
