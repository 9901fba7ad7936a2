import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import { browserSkipReason, browserTestsRun, CHROMIUM, CHROMIUM_ARGS } from './helpers/chromium.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import { client } from './helpers/http.js';
import {
  authorizeUrl,
  exchangeCode,
  pkcePair,
  registerClient,
  type RegisteredClient,
} from './helpers/oauth.js';

/** Where the phone-width screenshots of the pages go (kept for a person to look at). */
const SHOTS = process.env.OAUTH_SCREENSHOTS ?? join(tmpdir(), 'atrium-oauth-screenshots');

describe.skipIf(!browserTestsRun)(
  `OAuth in a real browser (headless Chromium)${browserSkipReason}`,
  () => {
    let t: TestApp;
    let user: CreatedUser;
    let partner: RegisteredClient;
    let partnerServer: Server;
    let context: BrowserContext;
    let profile: string;

    beforeAll(async () => {
      t = await startApp();
      user = await createUser(t.url);
      // the partner app: a page at its redirect URI
      partnerServer = createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Partner app</h1>');
      });
      await new Promise<void>((resolve) => partnerServer.listen(0, '127.0.0.1', resolve));
      const partnerPort = (partnerServer.address() as { port: number }).port;
      partner = await registerClient(await adminClient(t.url), {
        name: 'Acme Invoices',
        redirect_uris: [`http://127.0.0.1:${partnerPort}/callback`],
        scopes: ['openid', 'profile', 'email', 'users:read', 'posts:read'],
      });
      profile = mkdtempSync(join(tmpdir(), 'atrium-chromium-'));
      const appPort = new URL(t.url).port;
      const publicHost = new URL(PUBLIC_URL).hostname;
      // a fresh profile (user data dir) for every run
      context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        viewport: { width: 390, height: 844 },
        deviceScaleFactor: 2,
        isMobile: true,
        hasTouch: true,
        args: [
          ...CHROMIUM_ARGS,
          // PUBLIC_URL's host is not resolvable: send it to the app's listening port
          `--host-resolver-rules=MAP ${publicHost}:80 127.0.0.1:${appPort}`,
        ],
      });
      mkdirSync(SHOTS, { recursive: true });
    });

    afterAll(async () => {
      await context?.close();
      await new Promise((resolve) => partnerServer?.close(resolve));
      await t?.close();
      if (profile) {
        rmSync(profile, { recursive: true, force: true });
      }
    });

    function startUrl(challenge: string, state: string): string {
      return `${PUBLIC_URL}${authorizeUrl({
        client_id: partner.client_id,
        response_type: 'code',
        redirect_uri: partner.redirect_uris[0],
        scope: 'openid email users:read posts:read',
        state,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      })}`;
    }

    async function waitForPartner(page: Page): Promise<URL> {
      await page.waitForURL((u) => u.pathname === '/callback');
      return new URL(page.url());
    }

    it('signs in (wrong password first), denies, then allows; the app exchanges the code and calls the API', async () => {
      const page = await context.newPage();
      const thirdParty: string[] = [];
      page.on('request', (r) => {
        const host = new URL(r.url()).hostname;
        if (host !== new URL(PUBLIC_URL).hostname && host !== '127.0.0.1') {
          thirdParty.push(r.url());
        }
      });

      // 1. the sign-in page
      await page.goto(startUrl(pkcePair().challenge, 'deny-me'));
      await expect.poll(() => page.getByRole('heading', { name: 'Sign in' }).count()).toBe(1);
      await page.screenshot({ path: join(SHOTS, 'sign-in.png'), fullPage: true });
      // the labels name the inputs
      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill('certainly-not-the-password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/do not match/);
      await page.screenshot({ path: join(SHOTS, 'sign-in-wrong-password.png'), fullPage: true });
      expect(await page.getByLabel('Email').inputValue()).toBe(user.email);

      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();

      // 2. the consent page, then Deny
      await expect
        .poll(() => page.getByRole('heading', { name: 'Allow Acme Invoices?' }).count())
        .toBe(1);
      const text = await page.textContent('body');
      expect(text).toContain('See your email address');
      expect(text).toContain('See user profiles');
      expect(text).toContain('Read posts');
      await page.screenshot({ path: join(SHOTS, 'consent.png'), fullPage: true });
      // readable on a phone: nothing wider than the viewport
      const overflow = await page.evaluate<number>(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      );
      expect(overflow).toBe(0);
      await page.getByRole('button', { name: 'Deny' }).click();
      const denied = await waitForPartner(page);
      expect(denied.searchParams.get('error')).toBe('access_denied');
      expect(denied.searchParams.get('state')).toBe('deny-me');
      expect(denied.searchParams.get('iss')).toBe(`${PUBLIC_URL}/oauth`);

      // 3. again (already signed in): consent, Allow -> code
      const { verifier, challenge } = pkcePair();
      await page.goto(startUrl(challenge, 'allow-me'));
      await page.getByRole('button', { name: 'Allow' }).click();
      const allowed = await waitForPartner(page);
      expect(allowed.searchParams.get('state')).toBe('allow-me');
      expect(allowed.searchParams.get('iss')).toBe(`${PUBLIC_URL}/oauth`);
      const code = allowed.searchParams.get('code');
      expect(code).toBeTruthy();
      expect(thirdParty).toEqual([]);
      await page.close();

      // 4. the partner's backend: code + PKCE verifier -> tokens -> the API
      const tokens = await exchangeCode(t.url, partner, code!, verifier);
      expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
      const me = await client(t.url, { bearer: tokens.body.access_token }).get(
        `/api/v1/users/${user.id}`,
      );
      expect(me.status, JSON.stringify(me.body)).toBe(200);
      expect(me.body.data).toMatchObject({ id: user.id, email: user.email });
    });
  },
);
