import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';
import { authorize, exchangeCode, registerClient, type RegisteredClient } from './helpers/oauth.js';
import { connect, type Socket } from './subscriptions-helpers.js';

/**
 * The rate-limit identity of an OAuth access token is the pair (client, user): one user of a
 * partner app never spends another user's requests, GraphQL cost budget or WebSocket slots, nor
 * the user's own first-party budget.
 */
describe('(client, user) rate-limit identity of OAuth tokens', () => {
  let t: TestApp;
  let partner: RegisteredClient;
  let alice: CreatedUser;
  let bob: CreatedUser;
  let aliceApp: Client;
  let bobApp: Client;
  let aliceToken: string;
  let bobToken: string;
  const sockets: Socket[] = [];

  async function appToken(user: CreatedUser): Promise<string> {
    const { redirect, verifier } = await authorize(t.url, {
      client: partner,
      email: user.email,
      password: user.password,
      scope: 'openid users:read',
    });
    const res = await exchangeCode(t.url, partner, redirect.searchParams.get('code')!, verifier);
    expect(res.status).toBe(200);
    return res.body.access_token as string;
  }

  beforeAll(async () => {
    t = await startApp({
      RATE_LIMIT: '40',
      GRAPHQL_COST_BUDGET: '1000',
      WS_MAX_CONNECTIONS_PER_IDENTITY: '1',
    });
    partner = await registerClient(await adminClient(t.url));
    alice = await createUser(t.url);
    bob = await createUser(t.url);
    aliceToken = await appToken(alice);
    bobToken = await appToken(bob);
    aliceApp = client(t.url, { bearer: aliceToken });
    bobApp = client(t.url, { bearer: bobToken });
  });
  afterAll(async () => {
    await Promise.all(sockets.map((s) => s.dispose()));
    await t?.close();
  });

  it('requests: one user of the app using up its budget leaves the other user and first-party use alone', async () => {
    let last = await aliceApp.get('/api/v1/users?limit=1');
    const first = Number(last.headers.get('ratelimit-remaining'));
    for (let i = 0; i <= first && last.status === 200; i++) {
      last = await aliceApp.get('/api/v1/users?limit=1');
    }
    expect(last.status).toBe(429);
    const theirs = await bobApp.get('/api/v1/users?limit=1');
    expect(theirs.status).toBe(200);
    expect(Number(theirs.headers.get('ratelimit-remaining'))).toBeGreaterThan(30);
    // Alice's own first-party budget is another identity
    expect((await alice.client.get('/api/v1/users?limit=1')).status).toBe(200);
  });

  it('GraphQL cost: each user of the app has a budget of its own', async () => {
    // users of their own: the request test may have used up Alice's requests (tests run shuffled)
    const aliceApp = client(t.url, { bearer: await appToken(await createUser(t.url)) });
    const bobApp = client(t.url, { bearer: await appToken(await createUser(t.url)) });
    const query = '{ users(first: 50) { edges { node { id name } } } }';
    const a1 = await aliceApp.post('/graphql', { query });
    expect(a1.status).toBe(200);
    const remaining = a1.body.extensions.cost.remaining as number;
    expect(remaining).toBeLessThan(a1.body.extensions.cost.budget as number);
    const a2 = await aliceApp.post('/graphql', { query });
    // spent again, or refused past the budget
    expect(a2.body.extensions.cost.remaining).toBeLessThan(remaining);
    // the other user of the same app starts from a whole budget
    const b1 = await bobApp.post('/graphql', { query });
    expect(b1.status).toBe(200);
    expect(b1.body.extensions.cost.remaining).toBe(remaining);
  });

  it('WebSocket slots: a user holding the app cap leaves the other user a slot', async () => {
    sockets.push(await connect(t.url, { bearer: aliceToken }));
    await expect(connect(t.url, { bearer: aliceToken })).rejects.toThrow(/4429/);
    sockets.push(await connect(t.url, { bearer: bobToken }));
    // and first-party sockets are Alice's other identity
    sockets.push(await connect(t.url, { bearer: alice.token }));
  });
});
