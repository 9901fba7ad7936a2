// One partner server behind one address, at the default limits: how long it takes to complete
// 1,000 token-endpoint requests (authorization code exchanges and refreshes), and whether any is
// refused (429). The partner runs two registered clients (say its web and its mobile app): one
// client's valid token requests are capped at OAUTH_TOKEN_RATE_LIMIT (600) per minute by design
// (docs/rate-limits.md), so 1,000 in a minute needs two.
// Usage: npm run build && node bench/oauth-partner.mjs
// Environment: PARTNER_USERS (20 users per client), PARTNER_CODES (5 codes per user),
// PARTNER_REFRESHES (4 refreshes per code), BENCH_CONNECTIONS (10 requests in flight); REDIS_URL set =
// counters in Redis. The users' browsers (sign-in, consent, later authorizations) each come from an
// address of their own (X-Forwarded-For from a trusted proxy); every token request comes from the
// partner's one address.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const USERS = Number(process.env.PARTNER_USERS ?? 20);
const CODES = Number(process.env.PARTNER_CODES ?? 5);
const REFRESHES = Number(process.env.PARTNER_REFRESHES ?? 4);
const IN_FLIGHT = Number(process.env.BENCH_CONNECTIONS ?? 10);
const PARTNER_ADDRESS = '203.0.113.10';
const REDIRECT_URI = 'https://partner.example/callback';
const ADMIN = { email: 'bench-admin@example.com', password: 'bench-password-123' };

const workDir = mkdtempSync(join(tmpdir(), 'atrium-partner-'));
let child;
process.on('exit', () => {
  child?.kill('SIGKILL');
  rmSync(workDir, { recursive: true, force: true });
});

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

async function startApp() {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_URL: url,
    DATABASE_URL: `sqlite:${join(workDir, 'bench.sqlite')}`,
    DATA_DIR: workDir,
    LOG_LEVEL: 'warn',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    // the users' browsers and the partner server reach the app through this (trusted) proxy
    TRUSTED_PROXIES: '127.0.0.1',
    REDIS_PREFIX: `atrium-partner-bench-${process.pid}:`,
  };
  // default limits: none of RATE_LIMIT, AUTH_RATE_LIMIT, OAUTH_TOKEN_RATE_LIMIT is set
  for (const name of [
    'RATE_LIMIT',
    'AUTH_RATE_LIMIT',
    'OAUTH_TOKEN_RATE_LIMIT',
    'RATE_LIMIT_ENABLED',
  ]) {
    delete env[name];
  }
  if (!process.env.REDIS_URL) {
    delete env.REDIS_URL;
  }
  child = spawn(process.execPath, [join(ROOT, 'dist', 'main.js')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/health/ready`)).status === 200) {
        return url;
      }
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error('the app did not become ready');
}

async function json(base, method, path, body, headers = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body && JSON.stringify(body),
  });
  if (!res.ok) {
    throw new Error(`${method} ${path} -> ${res.status}: ${await res.text()}`);
  }
  return res.json();
}

/** A user's browser: cookies, and an address of its own. */
function browser(base, address) {
  const cookies = new Map();
  return async (url, form) => {
    const res = await fetch(url.startsWith('http') ? url : `${base}${url}`, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        'x-forwarded-for': address,
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) {
        cookies.delete(pair.slice(0, eq).trim());
      } else {
        cookies.set(pair.slice(0, eq).trim(), value);
      }
    }
    return { res, text: await res.text() };
  };
}

/** One authorization (sign-in and consent the first time, silent afterwards): a code and its verifier. */
async function authorizationCode(go, client, user) {
  const verifier = randomBytes(32).toString('base64url');
  const q = new URLSearchParams({
    client_id: client.client_id,
    response_type: 'code',
    redirect_uri: REDIRECT_URI,
    scope: 'openid offline_access users:read',
    state: randomBytes(8).toString('hex'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  let step = await go(`/oauth/auth?${q}`);
  for (let i = 0; i < 12; i++) {
    const location = step.res.headers.get('location');
    if (location?.startsWith(REDIRECT_URI)) {
      const code = new URL(location).searchParams.get('code');
      if (!code) {
        throw new Error(`no code: ${location}`);
      }
      return { code, verifier };
    }
    if (location) {
      step = await go(location);
      continue;
    }
    const uid = /\/oauth\/interaction\/([^/"]+)\//.exec(step.text)?.[1];
    const csrf = /name="csrf" value="([^"]+)"/.exec(step.text)?.[1];
    if (!uid || !csrf) {
      throw new Error(`unexpected OAuth page (${step.res.status}): ${step.text.slice(0, 200)}`);
    }
    step = step.text.includes('name="password"')
      ? await go(`/oauth/interaction/${uid}/login`, {
          csrf,
          email: user.email,
          password: user.password,
        })
      : await go(`/oauth/interaction/${uid}/confirm`, { csrf });
  }
  throw new Error('the OAuth flow did not reach the redirect URI');
}

const statuses = new Map();
async function tokenRequest(base, client, form) {
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-for': PARTNER_ADDRESS,
    },
    body: new URLSearchParams(form).toString(),
  });
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  const body = await res.json();
  return { status: res.status, body };
}

/** A code exchange, then REFRESHES refreshes of its refresh token, one after the other. */
async function partnerWork(base, client, code, verifier) {
  let res = await tokenRequest(base, client, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  });
  for (let i = 0; i < REFRESHES && res.status === 200; i++) {
    res = await tokenRequest(base, client, {
      grant_type: 'refresh_token',
      refresh_token: res.body.refresh_token,
    });
  }
}

async function pool(tasks, size) {
  const queue = [...tasks];
  await Promise.all(
    Array.from({ length: size }, async () => {
      for (let task = queue.shift(); task; task = queue.shift()) {
        await task();
      }
    }),
  );
}

const base = await startApp();
const { access_token: adminToken } = await json(base, 'POST', '/api/v1/auth/token', ADMIN);
const asAdmin = { authorization: `Bearer ${adminToken}` };
const clients = [];
for (const name of ['Partner web', 'Partner mobile']) {
  const { data } = await json(
    base,
    'POST',
    '/api/v1/oauth/clients',
    {
      name,
      redirect_uris: [REDIRECT_URI],
      scopes: ['openid', 'offline_access', 'users:read'],
    },
    asAdmin,
  );
  clients.push(data);
}
// the users' side, before the clock starts: each user signs in once in their browser, then the
// browser comes back for more codes (remembered consent and session)
const codes = [];
let n = 0;
for (const client of clients) {
  for (let u = 0; u < USERS; u++) {
    n += 1;
    const user = { email: `partner-user-${n}@example.com`, password: `partner-password-${n}` };
    await json(base, 'POST', '/api/v1/users', { name: `Partner user ${n}`, ...user }, asAdmin);
    const go = browser(base, `198.18.${Math.floor(n / 250)}.${n % 250}`);
    for (let c = 0; c < CODES; c++) {
      codes.push({ client, ...(await authorizationCode(go, client, user)) });
    }
  }
}
const total = codes.length * (1 + REFRESHES);
const started = performance.now();
await pool(
  codes.map(
    ({ client, code, verifier }) =>
      () =>
        partnerWork(base, client, code, verifier),
  ),
  IN_FLIGHT,
);
const seconds = (performance.now() - started) / 1000;
const summary = Object.fromEntries([...statuses].sort(([a], [b]) => a - b));
console.log(
  `${total} token requests (${codes.length} code exchanges, ${codes.length * REFRESHES} refreshes) ` +
    `from one address for ${clients.length} clients in ${seconds.toFixed(1)} s ` +
    `(${(total / seconds).toFixed(0)}/s, ${IN_FLIGHT} in flight); statuses: ${JSON.stringify(summary)}`,
);
if (summary[429] || Object.keys(summary).some((s) => s !== '200')) {
  console.error('FAILED: some token requests were not answered 200');
  process.exit(1);
}
if (seconds > 60) {
  console.error('FAILED: took longer than a minute');
  process.exit(1);
}
