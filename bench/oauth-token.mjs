// An OAuth access token for the bench (docs/oauth.md): registers a partner app, runs the
// authorization code flow with PKCE through the sign-in and consent pages as a browser would, and
// exchanges the code. Used by bench/run.mjs for the OAuth-token GET scenario.
import { createHash, randomBytes } from 'node:crypto';

const REDIRECT_URI = 'https://bench-partner.example/callback';

function cookieJar() {
  const cookies = new Map();
  return {
    store(res) {
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
    },
    header: () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
  };
}

export async function oauthAccessToken(base, adminToken, email, password) {
  const reg = await fetch(`${base}/api/v1/oauth/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'Bench partner',
      redirect_uris: [REDIRECT_URI],
      scopes: ['users:read'],
    }),
  });
  const client = (await reg.json()).data;
  if (!client?.client_id) {
    throw new Error(`could not register the bench OAuth client (${reg.status})`);
  }
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const jar = cookieJar();
  const go = async (url, form) => {
    const res = await fetch(url.startsWith('http') ? url : `${base}${url}`, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        cookie: jar.header(),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    jar.store(res);
    return { res, text: await res.text() };
  };
  const q = new URLSearchParams({
    client_id: client.client_id,
    response_type: 'code',
    redirect_uri: REDIRECT_URI,
    scope: 'users:read',
    state: 'bench',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  let step = await go(`/oauth/auth?${q}`);
  for (let i = 0; i < 12; i++) {
    const location = step.res.headers.get('location');
    if (location?.startsWith(REDIRECT_URI)) {
      const code = new URL(location).searchParams.get('code');
      const tokenRes = await fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT_URI,
          code_verifier: verifier,
        }).toString(),
      });
      const tokens = await tokenRes.json();
      if (!tokens.access_token) {
        throw new Error(`no OAuth access token: ${JSON.stringify(tokens)}`);
      }
      return tokens.access_token;
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
      ? await go(`/oauth/interaction/${uid}/login`, { csrf, email, password })
      : await go(`/oauth/interaction/${uid}/confirm`, { csrf });
  }
  throw new Error('the OAuth flow did not reach the redirect URI');
}
