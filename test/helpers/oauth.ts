import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { PUBLIC_URL } from './app.js';
import type { Client } from './http.js';

export const REDIRECT_URI = 'https://partner.example/callback';

export interface RegisteredClient {
  client_id: string;
  client_secret?: string;
  redirect_uris: string[];
  scopes: string[];
}

export async function registerClient(
  admin: Client,
  body: Record<string, unknown> = {},
): Promise<RegisteredClient> {
  const res = await admin.post('/api/v1/oauth/clients', {
    name: 'Partner app',
    redirect_uris: [REDIRECT_URI],
    scopes: ['openid', 'profile', 'email', 'offline_access', 'users:read', 'posts:read'],
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as RegisteredClient;
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
}

export function authorizeUrl(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined) {
      q.set(k, v);
    }
  }
  return `/oauth/auth?${q.toString()}`;
}

/**
 * A browser's first authorization request for `client`: the code flow with a fresh S256 challenge
 * (its verifier is not kept: for tests that stop before the token exchange), the client's first
 * redirect URI, `scope` and `state`; `extra` adds or overrides parameters.
 */
export function browserAuthorizeUrl(
  client: RegisteredClient,
  scope: string,
  state: string,
  extra: Record<string, string> = {},
): string {
  return authorizeUrl({
    client_id: client.client_id,
    response_type: 'code',
    redirect_uri: client.redirect_uris[0],
    scope,
    state,
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
    ...extra,
  });
}

export interface PageResponse {
  status: number;
  headers: Headers;
  body: string;
}

/** A minimal browser: follows nothing by itself, keeps cookies (ignoring paths), speaks forms. */
export class Browser {
  readonly cookies = new Map<string, string>();

  constructor(readonly base: string) {}

  private store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some(
        (a) => /^\s*expires=/i.test(a) && Date.parse(a.split('=')[1] ?? '') < Date.now(),
      );
      if (expired || value === '') {
        this.cookies.delete(name);
      } else {
        this.cookies.set(name, value);
      }
    }
  }

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** The app's PUBLIC_URL is not resolvable: its URLs are sent to the listening address. */
  private absolute(url: string): string {
    if (url.startsWith(PUBLIC_URL)) {
      return `${this.base}${url.slice(PUBLIC_URL.length)}`;
    }
    return url.startsWith('http') ? url : `${this.base}${url}`;
  }

  async get(url: string): Promise<PageResponse> {
    const res = await fetch(this.absolute(url), {
      redirect: 'manual',
      headers: { cookie: this.cookieHeader(), accept: 'text/html' },
    });
    this.store(res);
    return { status: res.status, headers: res.headers, body: await res.text() };
  }

  async post(url: string, form: Record<string, string>): Promise<PageResponse> {
    const res = await fetch(this.absolute(url), {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: this.cookieHeader(),
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams(form).toString(),
    });
    this.store(res);
    return { status: res.status, headers: res.headers, body: await res.text() };
  }
}

export function csrfOf(html: string): string {
  const m = /name="csrf" value="([^"]+)"/.exec(html);
  expect(m, html).toBeTruthy();
  return m![1];
}

function location(res: { status: number; headers: Headers }): string {
  const loc = res.headers.get('location');
  expect(loc, `status ${res.status}`).toBeTruthy();
  return loc!;
}

/** Follows redirects inside the authorization server until it lands elsewhere or on a page. */
export async function followToPageOrApp(
  browser: Browser,
  start: PageResponse,
): Promise<{ res: PageResponse; url: string }> {
  let res = start;
  let url = '';
  for (let i = 0; i < 10 && res.status >= 300 && res.status < 400; i++) {
    url = location(res);
    if (!url.startsWith('/') && !url.startsWith(PUBLIC_URL)) {
      return { res, url };
    }
    res = await browser.get(url);
  }
  return { res, url };
}

export interface FlowOptions {
  client: RegisteredClient;
  email: string;
  password: string;
  scope?: string;
  state?: string;
  prompt?: string;
  /** false: stop at the consent page and press Deny */
  allow?: boolean;
  challenge?: string;
  browser?: Browser;
}

/**
 * Runs the authorization code flow over plain HTTP as a browser would (sign-in, consent) and
 * returns the final redirect to the app.
 */
export async function authorize(
  base: string,
  opts: FlowOptions,
): Promise<{ redirect: URL; verifier: string; browser: Browser }> {
  const browser = opts.browser ?? new Browser(base);
  const { verifier, challenge } = pkcePair();
  const redirect = await signInAndConsent(
    browser,
    authorizeUrl({
      client_id: opts.client.client_id,
      response_type: 'code',
      redirect_uri: opts.client.redirect_uris[0],
      scope: opts.scope ?? 'openid users:read',
      state: opts.state ?? 'st-123',
      code_challenge: opts.challenge ?? challenge,
      code_challenge_method: 'S256',
      prompt: opts.prompt,
    }),
    opts,
  );
  return { redirect, verifier, browser };
}

/**
 * Opens an authorization URL (built by us or by a partner's library) in `browser`, signs in and
 * answers the consent page as `who` says (Allow unless `allow: false`), and returns the redirect to
 * the app.
 */
export async function signInAndConsent(
  browser: Browser,
  authorizationUrl: string,
  who: { email: string; password: string; allow?: boolean },
): Promise<URL> {
  const start = await browser.get(authorizationUrl);
  let { res, url } = await followToPageOrApp(browser, start);
  for (let step = 0; step < 4 && res.status === 200; step++) {
    const uid = /\/oauth\/interaction\/([^/?]+)/.exec(url)?.[1];
    expect(uid, res.body).toBeTruthy();
    const csrf = csrfOf(res.body);
    let next: PageResponse;
    if (res.body.includes('name="password"')) {
      next = await browser.post(`/oauth/interaction/${uid}/login`, {
        csrf,
        email: who.email,
        password: who.password,
      });
    } else if (who.allow === false) {
      next = await browser.post(`/oauth/interaction/${uid}/abort`, { csrf });
    } else {
      next = await browser.post(`/oauth/interaction/${uid}/confirm`, { csrf });
    }
    ({ res, url } = await followToPageOrApp(browser, next));
  }
  expect(res.status, res.body).toBe(303);
  return new URL(url);
}

export async function tokenRequest(
  base: string,
  client: RegisteredClient,
  form: Record<string, string>,
): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  const body = new URLSearchParams(form);
  if (client.client_secret) {
    headers.authorization = `Basic ${Buffer.from(
      `${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`,
    ).toString('base64')}`;
  } else {
    body.set('client_id', client.client_id);
  }
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers,
    body: body.toString(),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

export async function exchangeCode(
  base: string,
  client: RegisteredClient,
  code: string,
  verifier: string,
) {
  return tokenRequest(base, client, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: client.redirect_uris[0],
    code_verifier: verifier,
  });
}

export function jwtParts(token: string): { header: any; payload: any } {
  const [h = '', p = ''] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(h, 'base64url').toString('utf8')),
    payload: JSON.parse(Buffer.from(p, 'base64url').toString('utf8')),
  };
}
