import { createHash } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import {
  browserAuthorizeUrl,
  authorize,
  Browser,
  followToPageOrApp,
  registerClient,
  type RegisteredClient,
} from './helpers/oauth.js';

function startUrl(client: RegisteredClient, extra: Record<string, string> = {}): string {
  return browserAuthorizeUrl(client, 'openid users:read', 'edge-state', extra);
}

function revoke(base: string, client: RegisteredClient, secret: string, from?: string) {
  return fetch(`${base}/oauth/token/revocation`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${client.client_id}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
      ...(from ? { 'x-forwarded-for': from } : {}),
    },
    body: new URLSearchParams({ token: 'not-a-token-we-issued' }).toString(),
  });
}

describe('OAuth edges', () => {
  let t: TestApp;
  let admin: Client;
  let partner: RegisteredClient;

  beforeAll(async () => {
    t = await startApp({ AUTH_RATE_LIMIT: '5', TRUSTED_PROXIES: '127.0.0.1' });
    admin = await adminClient(t.url);
    partner = await registerClient(admin);
  });
  afterAll(() => t?.close());

  it('a browser whose session belongs to a deleted user is signed out: the sign-in page again, never a 500', async () => {
    const user = await createUser(t.url);
    const { browser } = await authorize(t.url, {
      client: partner,
      email: user.email,
      password: user.password,
    });
    // the session is remembered: a second authorization needs no sign-in
    const again = await followToPageOrApp(browser, await browser.get(startUrl(partner)));
    expect(again.res.status).toBe(303);
    expect(again.url).toMatch(/^https:\/\/partner\.example\/callback\?code=/);

    expect((await admin.delete(`/api/v1/users/${user.id}`)).status).toBe(204);
    const after = await followToPageOrApp(browser, await browser.get(startUrl(partner)));
    expect(after.res.status, after.res.body).toBe(200);
    expect(after.url).toMatch(/^\/oauth\/interaction\//);
    expect(after.res.body).toContain('name="password"');
    // and another user can sign in from that browser
    const other = await createUser(t.url);
    const { redirect } = await authorize(t.url, {
      client: partner,
      email: other.email,
      password: other.password,
      browser,
    });
    expect(redirect.searchParams.get('code')).toBeTruthy();
  });

  it('counts failed client authentication at /oauth/token/revocation in the credential bucket: 429 once over', async () => {
    const from = '198.51.100.7';
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 7; i++) {
      last = await revoke(t.url, partner, `wrong-secret-${i}`, from);
      statuses.push(last.status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    expect(last!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(last!.headers.get('cache-control')).toBe('no-store');
    const body = (await last!.json()) as { error: string; error_description: string };
    expect(body.error).toBe('rate_limited');
    expect(body.error_description).toMatch(/retry in \d+ s/);
    // the same bucket as failed passwords: the address's next wrong password is refused too
    const token = await fetch(`${t.url}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
      body: JSON.stringify({ email: 'nobody@example.com', password: 'wrong-password-1' }),
    });
    expect(token.status).toBe(429);
    // another client's right secret from the same address still works (below the hard limit)
    expect((await revoke(t.url, partner, partner.client_secret!, from)).status).toBe(200);
    // valid revocations are never counted: another address revokes 8 times with the right secret
    for (let i = 0; i < 8; i++) {
      expect((await revoke(t.url, partner, partner.client_secret!, '198.51.100.8')).status).toBe(
        200,
      );
    }
  });

  it('the form_post response page (it carries the code) cannot be framed', async () => {
    const user = await createUser(t.url);
    const browser = new Browser(t.url);
    const { res } = await followToPageOrApp(
      browser,
      await browser.get(startUrl(partner, { response_mode: 'form_post' })),
    );
    const uid = /\/oauth\/interaction\/([^/?]+)/.exec(res.body)?.[1];
    expect(uid, res.body).toBeTruthy();
    // sign in and consent; the last step answers with the auto-submitting form
    const csrf = /name="csrf" value="([^"]+)"/.exec(res.body)![1];
    let page = await browser.post(`/oauth/interaction/${uid}/login`, {
      csrf,
      email: user.email,
      password: user.password,
    });
    let hops = 0;
    while (page.status === 303 && hops++ < 6) {
      page = await browser.get(page.headers.get('location')!);
      if (page.status === 200 && page.body.includes('/confirm')) {
        const uid2 = /\/oauth\/interaction\/([^/?]+)\/confirm/.exec(page.body)![1];
        page = await browser.post(`/oauth/interaction/${uid2}/confirm`, {
          csrf: /name="csrf" value="([^"]+)"/.exec(page.body)![1],
        });
      }
    }
    expect(page.status, page.body).toBe(200);
    expect(page.body).toContain('name="code"');
    expect(page.body).toContain('action="https://partner.example/callback"');
    const csp = page.headers.get('content-security-policy');
    expect(csp).toContain("frame-ancestors 'none'");
    // the page's one inline script (which submits the form) is allowed by its hash, nothing else
    const script = /<script>([\s\S]*?)<\/script>/.exec(page.body)![1];
    const hash = createHash('sha256').update(script).digest('base64');
    expect(csp).toMatch(new RegExp(`script-src 'sha256-${hash.replace(/[+/]/g, '\\$&')}'(;|$)`));
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('cache-control')).toMatch(/no-store/);
  });
});

describe('OAuth pages count in the per-address request limit', () => {
  let t: TestApp;
  let partner: RegisteredClient;

  beforeAll(async () => {
    t = await startApp({ RATE_LIMIT: '6', TRUSTED_PROXIES: '127.0.0.1' });
    partner = await registerClient(await adminClient(t.url));
  });
  afterAll(() => t?.close());

  it('/oauth/auth and the interaction pages spend the address requests; then 429 with RateLimit-*', async () => {
    const from = '203.0.113.50';
    let cookie = '';
    const get = (url: string) =>
      fetch(`${t.url}${url}`, { redirect: 'manual', headers: { 'x-forwarded-for': from, cookie } });
    const first = await get(startUrl(partner));
    cookie = first.headers
      .getSetCookie()
      .map((c) => c.split(';', 1)[0])
      .join('; ');
    expect(first.status).toBe(303);
    expect(first.headers.get('ratelimit-limit')).toBe('6');
    expect(first.headers.get('ratelimit-remaining')).toBe('5');
    const page = await get(first.headers.get('location')!);
    expect(page.status).toBe(200);
    expect(page.headers.get('ratelimit-remaining')).toBe('4');
    for (let i = 0; i < 4; i++) {
      expect((await get(startUrl(partner))).status).toBe(303);
    }
    const refused = await get(startUrl(partner));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.headers.get('content-type')).toMatch(/^text\/html/);
    expect(refused.headers.get('x-frame-options')).toBe('DENY');
    expect(await refused.text()).toContain('Too many requests');
    // the interaction page is refused as well, and another address is not affected
    expect((await get(first.headers.get('location')!)).status).toBe(429);
    const other = await fetch(`${t.url}${startUrl(partner)}`, {
      redirect: 'manual',
      headers: { 'x-forwarded-for': '203.0.113.51' },
    });
    expect(other.status).toBe(303);
  });

  it('an anonymous authorization request stores one interaction, kept for 10 minutes at most', async () => {
    const db = t.app.get(DataSource);
    const before = Date.now();
    const res = await fetch(`${t.url}${startUrl(partner)}`, {
      redirect: 'manual',
      headers: { 'x-forwarded-for': '203.0.113.60' },
    });
    expect(res.status).toBe(303);
    const uid = /\/oauth\/interaction\/([^/?]+)/.exec(res.headers.get('location')!)![1];
    const rows = await db.query<{ kind: string; expires_at: string | number }[]>(
      `SELECT kind, expires_at FROM oauth_artifacts WHERE id = '${uid}' OR uid = '${uid}'`,
    );
    expect(rows.map((r) => r.kind)).toEqual(['Interaction']);
    const expires = Number(rows[0].expires_at);
    expect(expires).toBeGreaterThan(before + 9 * 60_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 10 * 60_000 + 1_000);
  });
});
