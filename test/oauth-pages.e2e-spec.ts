import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import {
  browserAuthorizeUrl,
  authorize,
  Browser,
  csrfOf,
  followToPageOrApp,
  registerClient,
  tokenRequest,
  type RegisteredClient,
} from './helpers/oauth.js';

function startUrl(client: RegisteredClient, extra: Record<string, string> = {}): string {
  return browserAuthorizeUrl(client, 'openid email users:read posts:read', 'page-state', extra);
}

/** Opens the authorization URL in a fresh browser and lands on the first page. */
async function openSignIn(base: string, client: RegisteredClient, extra?: Record<string, string>) {
  const browser = new Browser(base);
  const { res, url } = await followToPageOrApp(browser, await browser.get(startUrl(client, extra)));
  const uid = /\/oauth\/interaction\/([^/?]+)/.exec(url)![1];
  return { browser, res, uid };
}

describe('OAuth sign-in and consent pages', () => {
  let t: TestApp;
  let admin: Client;
  let user: CreatedUser;
  let partner: RegisteredClient;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    user = await createUser(t.url);
    partner = await registerClient(admin, { name: 'Acme <Invoices>' });
  });
  afterAll(() => t?.close());

  it('serves a sign-in page with strict headers, its own stylesheet and labelled inputs', async () => {
    const { res } = await openSignIn(t.url, partner);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("form-action 'self' https://partner.example");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toContain(
      '<meta name="viewport" content="width=device-width, initial-scale=1">',
    );
    expect(res.body).toContain('<label for="email">');
    expect(res.body).toContain('id="email"');
    expect(res.body).toContain('<label for="password">');
    expect(res.body).toContain('id="password"');
    // the app's name is escaped, never markup
    expect(res.body).toContain('Acme &lt;Invoices&gt;');
    expect(res.body).not.toMatch(/<script|https?:\/\/(?!partner\.example)[a-z]/i);
    const css = await fetch(`${t.url}/oauth/assets/oauth.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    expect(await css.text()).toContain('@media');
  });

  it('shows the page again with a clear message for a wrong password', async () => {
    const { browser, res, uid } = await openSignIn(t.url, partner);
    const wrong = await browser.post(`/oauth/interaction/${uid}/login`, {
      csrf: csrfOf(res.body),
      email: user.email,
      password: 'not-the-password',
    });
    expect(wrong.status).toBe(200);
    expect(wrong.body).toContain('role="alert"');
    expect(wrong.body).toContain('do not match');
    expect(wrong.body).toContain(`value="${user.email}"`);
    // then the right password moves on to consent
    const right = await browser.post(`/oauth/interaction/${uid}/login`, {
      csrf: csrfOf(wrong.body),
      email: user.email,
      password: user.password,
    });
    const { res: consent } = await followToPageOrApp(browser, right);
    expect(consent.status).toBe(200);
    expect(consent.body).toContain('Allow Acme &lt;Invoices&gt;?');
  });

  it('names the app and says each requested scope in words on the consent page', async () => {
    const { browser, res, uid } = await openSignIn(t.url, partner);
    const next = await browser.post(`/oauth/interaction/${uid}/login`, {
      csrf: csrfOf(res.body),
      email: user.email,
      password: user.password,
    });
    const { res: consent } = await followToPageOrApp(browser, next);
    expect(consent.body).toContain('Acme &lt;Invoices&gt;');
    expect(consent.body).toContain('See your email address');
    expect(consent.body).toContain('See user profiles');
    expect(consent.body).toContain('Read posts');
    expect(consent.body).toContain(user.email);
    expect(consent.body).toMatch(/>Allow</);
    expect(consent.body).toMatch(/>Deny</);
    expect(consent.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it('returns error=access_denied (with state and iss) when the user presses Deny', async () => {
    const { redirect } = await authorize(t.url, {
      client: partner,
      email: user.email,
      password: user.password,
      state: 'deny-state',
      allow: false,
    });
    expect(redirect.origin + redirect.pathname).toBe(partner.redirect_uris[0]);
    expect(redirect.searchParams.get('error')).toBe('access_denied');
    expect(redirect.searchParams.get('state')).toBe('deny-state');
    expect(redirect.searchParams.get('iss')).toMatch(/\/oauth$/);
    expect(redirect.searchParams.get('code')).toBeNull();
  });

  it('remembers consent for the same scopes; prompt=consent and prompt=login force the pages', async () => {
    const member = await createUser(t.url);
    const app = await registerClient(admin);
    await authorize(t.url, { client: app, email: member.email, password: member.password });

    // a new browser (new session): sign-in only, no consent page
    const browser = new Browser(t.url);
    const first = await followToPageOrApp(
      browser,
      await browser.get(startUrl(app, { scope: 'openid users:read' })),
    );
    const uid = /\/oauth\/interaction\/([^/?]+)/.exec(first.url)![1];
    const signedIn = await browser.post(`/oauth/interaction/${uid}/login`, {
      csrf: csrfOf(first.res.body),
      email: member.email,
      password: member.password,
    });
    const done = await followToPageOrApp(browser, signedIn);
    expect(done.res.status).toBe(303);
    expect(new URL(done.url).searchParams.get('code')).toBeTruthy();

    // same browser again: neither page
    const silent = await followToPageOrApp(
      browser,
      await browser.get(startUrl(app, { scope: 'openid users:read' })),
    );
    expect(new URL(silent.url).searchParams.get('code')).toBeTruthy();

    // prompt=consent: the consent page again
    const forcedConsent = await followToPageOrApp(
      browser,
      await browser.get(startUrl(app, { scope: 'openid users:read', prompt: 'consent' })),
    );
    expect(forcedConsent.res.status).toBe(200);
    expect(forcedConsent.res.body).toContain('>Allow<');

    // prompt=login: the sign-in page again
    const forcedLogin = await followToPageOrApp(
      browser,
      await browser.get(startUrl(app, { scope: 'openid users:read', prompt: 'login' })),
    );
    expect(forcedLogin.res.status).toBe(200);
    expect(forcedLogin.res.body).toContain('name="password"');

    // more scopes than consented: the consent page again
    const wider = await followToPageOrApp(
      browser,
      await browser.get(startUrl(app, { scope: 'openid users:read posts:read' })),
    );
    expect(wider.res.status).toBe(200);
    expect(wider.res.body).toContain('Read posts');
  });

  it('refuses a form without the page token or from another origin (CSRF)', async () => {
    const { browser, res, uid } = await openSignIn(t.url, partner);
    const noToken = await browser.post(`/oauth/interaction/${uid}/login`, {
      email: user.email,
      password: user.password,
    });
    expect(noToken.status).toBe(403);
    const cross = await fetch(`${t.url}/oauth/interaction/${uid}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        origin: 'https://evil.example',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        csrf: csrfOf(res.body),
        email: user.email,
        password: user.password,
      }).toString(),
    });
    expect(cross.status).toBe(403);
    // without the interaction cookie (another browser) the page token alone is useless
    const stranger = new Browser(t.url);
    const noCookie = await stranger.post(`/oauth/interaction/${uid}/login`, {
      csrf: csrfOf(res.body),
      email: user.email,
      password: user.password,
    });
    expect(noCookie.status).toBe(400);
    expect(noCookie.headers.get('location')).toBeNull();
  });
});

describe('OAuth credential rate limit', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({ AUTH_RATE_LIMIT: '4' });
  });
  afterAll(() => t?.close());

  it('counts wrong sign-ins (per address and account) against the credential buckets; a client that authenticates at /oauth/token is never refused by them', async () => {
    const admin = await adminClient(t.url);
    const partner = await registerClient(admin);
    const { browser, res, uid } = await openSignIn(t.url, partner);
    const attempt = (body: string) =>
      browser.post(`/oauth/interaction/${uid}/login`, {
        csrf: csrfOf(body),
        email: 'nobody@example.com',
        password: 'wrong-password-here',
      });
    const a1 = await attempt(res.body); // a wrong password: the page again
    expect(a1.status).toBe(200);
    expect(a1.body).not.toContain('Too many sign-in attempts');
    // an authenticated client's token request counts against its own budget (OAUTH_TOKEN_RATE_LIMIT)
    const token = await tokenRequest(t.url, partner, { grant_type: 'password' });
    expect(token.status).toBe(400);
    expect(token.headers.get('ratelimit-limit')).toBe('600');
    // AUTH_RATE_LIMIT=4: at most four wrong passwords at one account (and from one address) are
    // checked; the next attempt is 429 with Retry-After and a message on the page
    let page = a1;
    let tries = 1;
    while (page.status === 200 && tries < 6) {
      page = await attempt(page.body);
      tries++;
    }
    expect(page.status).toBe(429);
    expect(tries).toBeGreaterThanOrEqual(4);
    expect(tries).toBeLessThanOrEqual(5);
    expect(page.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(page.body).toContain('Too many sign-in attempts');
    // the address's bucket is used up: a wrong client secret from it is 429, the right one still works
    const blocked = await tokenRequest(
      t.url,
      { ...partner, client_secret: 'wrong-secret' },
      { grant_type: 'password' },
    );
    expect(blocked.status).toBe(429);
    expect(blocked.body.error).toBe('rate_limited');
    expect(blocked.headers.get('retry-after')).toMatch(/^\d+$/);
    const right = await tokenRequest(t.url, partner, { grant_type: 'password' });
    expect(right.status).toBe(400);
    expect(right.body.error).toBe('unsupported_grant_type');
  });
});
