import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codes, gql, sqlCounter } from './graphql-client.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { createUser, tokenFor, type CreatedUser } from './helpers/factories.js';
import { request } from './helpers/http.js';
import { listening } from './subscriptions-helpers.js';
import { TOPICS } from '../src/events/events.service.js';
import { scaled } from './helpers/time.js';

interface Frame {
  type: string;
  id?: string;
  payload?: any;
}

/** A raw graphql-transport-ws socket (every frame visible). */
async function openSocket(base: string, init: Record<string, unknown> = {}) {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  const frames: Frame[] = [];
  ws.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString('utf8')) as Frame));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.on('error', () => undefined);
  const waitFor = async (match: (f: Frame) => boolean, ms = 5000): Promise<Frame> => {
    const deadline = Date.now() + scaled(ms);
    for (;;) {
      const found = frames.find(match);
      if (found) {
        return found;
      }
      if (Date.now() > deadline) {
        throw new Error(`no matching frame; got ${JSON.stringify(frames).slice(0, 2000)}`);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  ws.send(JSON.stringify({ type: 'connection_init', payload: init }));
  await waitFor((f) => f.type === 'connection_ack');
  let next = 0;
  return {
    frames,
    waitFor,
    /** Runs one operation; resolves with its first `next` payload or its `error` payload. */
    async run(query: string, variables?: unknown): Promise<{ next?: any; error?: any[] }> {
      const id = String(++next);
      ws.send(JSON.stringify({ id, type: 'subscribe', payload: { query, variables } }));
      const frame = await waitFor((f) => f.id === id && (f.type === 'next' || f.type === 'error'));
      return frame.type === 'next' ? { next: frame.payload } : { error: frame.payload as any[] };
    },
    subscribe(id: string, query: string, variables?: unknown) {
      ws.send(JSON.stringify({ id, type: 'subscribe', payload: { query, variables } }));
    },
    close: () => ws.close(),
  };
}

const STRICT = { accept: 'application/graphql-response+json' };
const rep = (n: number, f: (i: number) => string) =>
  Array.from({ length: n }, (_, i) => f(i)).join(' ');

/** `{"a":{"a":...{"a":1}}}` nested `levels` deep (the outer object is level 1). */
function nested(levels: number): Record<string, unknown> {
  let value: unknown = 1;
  for (let i = 1; i < levels; i++) {
    value = { a: value };
  }
  return { a: value };
}

describe('hostile GraphQL shapes (issue: one request must not crash or freeze the service)', () => {
  let t: TestApp;
  let admin: string;
  let alice: CreatedUser;
  const sockets: { close(): void }[] = [];

  beforeAll(async () => {
    t = await startApp();
    admin = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    alice = await createUser(t.url, { name: 'Alice Hostile' });
  });
  afterAll(async () => {
    sockets.forEach((s) => s.close());
    await t.close();
  });

  const socket = async (init: Record<string, unknown> = {}) => {
    const s = await openSocket(t.url, init);
    sockets.push(s);
    return s;
  };

  describe('the cost bounds what a query returns', () => {
    it('refuses the alias flood of post bodies before running anything (HTTP and WebSocket)', async () => {
      const flood = `{ ${rep(1000, (i) => `p${i}: posts(first: 100) { body }`)} }`;
      const sql = sqlCounter(t);
      try {
        const res = await gql(t.url, flood, { auth: { bearer: alice.token }, headers: STRICT });
        expect(res.status).toBe(400);
        expect(codes(res.body)).toEqual(['QUERY_TOO_COMPLEX']);
        expect(res.body.data).toBeUndefined();
        expect(sql.statements.filter((s) => /from posts\b/i.test(s))).toEqual([]);
      } finally {
        sql.restore();
      }
      const s = await socket({ Authorization: `Bearer ${alice.token}` });
      const ws = await s.run(flood);
      expect(ws.error?.map((e) => e.extensions?.code)).toEqual(['QUERY_TOO_COMPLEX']);
    });

    it('charges scalars and large text fields: 100 post bodies are over the limit, fewer aliases too', async () => {
      const one = await gql(t.url, '{ posts(first: 100) { body } }', {
        auth: { bearer: alice.token },
        headers: STRICT,
      });
      expect(one.status).toBe(400);
      expect(codes(one.body)).toEqual(['QUERY_TOO_COMPLEX']);
      expect(one.body.extensions?.cost?.requested).toBe(1 + 100 * 20);
      const few = `{ ${rep(20, (i) => `p${i}: posts(first: 40) { id body }`)} }`;
      const res = await gql(t.url, few, { auth: { bearer: alice.token } });
      expect(codes(res.body)).toEqual(['QUERY_TOO_COMPLEX']);
      expect(res.body.extensions?.cost?.requested).toBe(20 * (1 + 40 * (1 + 20)));
      const ok = await gql(t.url, '{ posts(first: 20) { id title body } }', {
        auth: { bearer: alice.token },
      });
      expect(ok.body.errors).toBeUndefined();
      expect(ok.body.extensions?.cost?.requested).toBe(1 + 20 * (1 + 1 + 20));
    });
  });

  describe('documents over the shape limits are refused before validation', () => {
    const fields15k = `{ ${rep(1500, () => 'me { id }')} }`;
    const args80k = `{ users(${rep(8000, () => 'first: 1')}) { totalCount } }`;
    const fragmentPairs = `{ me { ${rep(90, (i) => `...F${i}`)} } } ${rep(
      90,
      (i) => `fragment F${i} on User { posts(first: 1) { totalCount } }`,
    )}`;

    it('answers QUERY_TOO_COMPLEX quickly to anonymous callers over HTTP (POST and GET)', async () => {
      for (const [name, query] of [
        ['15 KB of repeated fields', fields15k],
        ['80 KB of repeated arguments', args80k],
        ['90 fragments selecting one field', fragmentPairs],
      ]) {
        const started = Date.now();
        const res = await gql(t.url, query, { headers: STRICT });
        expect(res.status, name).toBe(400);
        expect(codes(res.body), name).toEqual(['QUERY_TOO_COMPLEX']);
        expect(res.body.errors?.[0]?.message, name).toMatch(/^Document too complex/);
        expect(Date.now() - started, name).toBeLessThan(1500);
        const legacy = await gql(t.url, query);
        expect(legacy.status, name).toBe(200);
        expect(codes(legacy.body), name).toEqual(['QUERY_TOO_COMPLEX']);
      }
      const get = await gql(t.url, fragmentPairs, { method: 'GET' });
      expect(codes(get.body)).toEqual(['QUERY_TOO_COMPLEX']);
    });

    it('answers QUERY_TOO_COMPLEX quickly to anonymous sockets', async () => {
      const s = await socket();
      for (const query of [fields15k, fragmentPairs]) {
        const started = Date.now();
        const res = await s.run(query);
        expect(res.error?.map((e) => e.extensions?.code)).toEqual(['QUERY_TOO_COMPLEX']);
        expect(Date.now() - started).toBeLessThan(1500);
      }
    });

    it('refuses aliases over the limit and a repeated argument once, and still runs real queries', async () => {
      const aliases = `{ ${rep(201, (i) => `a${i}: __typename`)} }`;
      const res = await gql(t.url, aliases, { auth: { bearer: alice.token } });
      expect(codes(res.body)).toEqual(['QUERY_TOO_COMPLEX']);
      expect(res.body.errors?.[0]?.message).toMatch(/aliases \(at most 200\)/);
      const twice = await gql(t.url, '{ users(first: 1, first: 2) { totalCount } }', {
        auth: { bearer: alice.token },
      });
      expect(twice.body.errors).toEqual([
        expect.objectContaining({
          message: 'There can be only one argument named "first".',
          extensions: expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED' }),
        }),
      ]);
      const fine = await gql(
        t.url,
        `{ ${rep(20, (i) => `u${i}: user(id: "${alice.id}") { ...U }`)} } fragment U on User { id name }`,
        { auth: { bearer: alice.token } },
      );
      expect(fine.body.errors).toBeUndefined();
      expect(fine.body.data.u19).toEqual({ id: alice.id, name: 'Alice Hostile' });
    });
  });

  describe('variables are bounded before coercion', () => {
    it('refuses variables nested too deep over GET and WebSocket with BAD_REQUEST (HTTP 400)', async () => {
      const q = 'query($input: CreateUserInput) { me { id } }';
      const get = await gql(t.url, q, {
        method: 'GET',
        auth: { bearer: alice.token },
        variables: { input: nested(40) },
      });
      expect(get.status).toBe(400);
      expect(codes(get.body)).toEqual(['BAD_REQUEST']);
      expect(get.body.errors?.[0]?.message).toMatch(/deeper than 32/);
      const s = await socket({ Authorization: `Bearer ${alice.token}` });
      const ws = await s.run(q, { input: nested(40) });
      expect(ws.error?.map((e) => e.extensions?.code)).toEqual(['BAD_REQUEST']);
      // within the bound: the usual coercion error, not this one
      const shallow = await gql(t.url, q, {
        method: 'GET',
        auth: { bearer: alice.token },
        variables: { input: nested(5) },
      });
      expect(shallow.body.errors?.[0]?.message).not.toMatch(/deeper/);
    });

    it('refuses more than 10 000 entries over POST and WebSocket', async () => {
      const q = 'mutation($input: [CreateUserInput!]!) { bulkCreate(input: $input) { id } }';
      const variables = { input: Array.from({ length: 10_001 }, () => 0) };
      const post = await gql(t.url, q, { auth: { bearer: admin }, variables });
      expect(post.status).toBe(400);
      expect(codes(post.body)).toEqual(['BAD_REQUEST']);
      expect(post.body.errors?.[0]?.message).toMatch(/more than 10000/);
      const s = await socket({ Authorization: `Bearer ${admin}` });
      const ws = await s.run(q, variables);
      expect(ws.error?.map((e) => e.extensions?.code)).toEqual(['BAD_REQUEST']);
      expect(ws.error?.[0]?.message).toMatch(/more than 10000 entries/);
    });
  });

  describe('client errors instead of INTERNAL_SERVER_ERROR', () => {
    it('answers a subscription sent over HTTP with 400 BAD_REQUEST naming the WebSocket', async () => {
      for (const headers of [{}, STRICT]) {
        const res = await gql(t.url, 'subscription { newMessage { id } }', {
          auth: { bearer: alice.token },
          headers,
        });
        expect(res.status).toBe(400);
        expect(codes(res.body)).toEqual(['BAD_REQUEST']);
        expect(res.body.errors?.[0]?.message).toMatch(/WebSocket/);
      }
    });

    it('answers a persisted query whose hash does not match with 400 BAD_REQUEST', async () => {
      const res = await request(t.url, '/graphql', {
        method: 'POST',
        auth: { bearer: alice.token },
        body: {
          query: '{ me { id } }',
          extensions: { persistedQuery: { version: 1, sha256Hash: '0'.repeat(64) } },
        },
      });
      expect(res.status).toBe(400);
      expect(codes(res.body)).toEqual(['BAD_REQUEST']);
    });
  });
});

describe('the response size is capped while resolving', () => {
  let t: TestApp;
  let admin: string;
  beforeAll(async () => {
    t = await startApp();
    admin = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers QUERY_TOO_COMPLEX instead of a response over 4 MiB (HTTP and WebSocket)', async () => {
    // 30 posts of 50 000 three-byte characters: 4.5 MB of bodies within 632 cost points
    const bob = await createUser(t.url, { name: 'Bob Big' });
    const body = '€'.repeat(50_000);
    for (let i = 0; i < 30; i++) {
      const res = await request(t.url, '/api/v1/posts', {
        method: 'POST',
        auth: { bearer: bob.token },
        body: { title: `big ${i}`, body },
      });
      expect(res.status).toBe(201);
    }
    const q = `{ user(id: "${bob.id}") { posts(first: 30) { nodes { body } } } }`;
    const strict = await gql(t.url, q, { auth: { bearer: admin }, headers: STRICT });
    expect(strict.status).toBe(400);
    expect(strict.body.data).toBeUndefined();
    expect(strict.body.errors).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/^Response too large/),
        extensions: { code: 'QUERY_TOO_COMPLEX', response: { limit: 4 * 1024 * 1024 } },
      }),
    ]);
    expect(strict.body.extensions?.cost?.requested).toBe(1 + 1 + 30 * (1 + 20));
    expect(strict.headers.get('cache-control')).toBe('no-store');
    const half = await gql(t.url, q.replace('first: 30', 'first: 20'), { auth: { bearer: admin } });
    expect(half.body.errors).toBeUndefined();
    expect(half.body.data.user.posts.nodes).toHaveLength(20);
    const s = await openSocket(t.url, { Authorization: `Bearer ${admin}` });
    try {
      const ws = await s.run(q);
      expect(ws.error ?? ws.next.errors).toEqual([
        expect.objectContaining({
          extensions: { code: 'QUERY_TOO_COMPLEX', response: { limit: 4 * 1024 * 1024 } },
        }),
      ]);

      // a subscription event over 256 KiB is replaced by the error; smaller events still arrive
      const roomRes = await gql(t.url, 'mutation($n: String!) { createRoom(name: $n) { id } }', {
        auth: { bearer: admin },
        variables: { n: `big-events-${Date.now()}` },
      });
      const room = roomRes.body.data.createRoom.id as string;
      const selection = (n: number) =>
        `subscription($r: ID!) { messageAdded(roomId: $r) { content author { posts(first: ${n}) { nodes { body } } } } }`;
      s.subscribe('big', selection(2), { r: room });
      s.subscribe('small', selection(1), { r: room });
      await listening(t, TOPICS.messageAdded(room), 2);
      const sent = await gql(
        t.url,
        'mutation($r: ID!) { sendMessage(roomId: $r, content: "look") { id } }',
        { auth: { bearer: bob.token }, variables: { r: room } },
      );
      expect(sent.body.errors).toBeUndefined();
      const bigEvent = await s.waitFor((f) => f.id === 'big' && f.type === 'next');
      expect(bigEvent.payload).toEqual({
        errors: [
          expect.objectContaining({
            extensions: { code: 'QUERY_TOO_COMPLEX', response: { limit: 256 * 1024 } },
          }),
        ],
      });
      const smallEvent = await s.waitFor((f) => f.id === 'small' && f.type === 'next');
      expect(smallEvent.payload.data.messageAdded.author.posts.nodes[0].body).toBe(body);
    } finally {
      s.close();
    }
  });
});

describe('subscriptions pay their cost for every event', () => {
  let t: TestApp;
  let admin: string;
  beforeAll(async () => {
    // 4 points per event of the subscription below: alice's budget covers the subscribe and 6 events
    t = await startApp({ GRAPHQL_COST_BUDGET: '28', GRAPHQL_COST_WINDOW_S: '60' });
    admin = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses a subscription over 100 points at subscribe (it would be re-executed for every event)', async () => {
    const alice = await createUser(t.url, { name: 'Alice Heavy' });
    const s = await openSocket(t.url, { Authorization: `Bearer ${alice.token}` });
    try {
      const heavy = await s.run(
        'subscription { newMessage { author { posts(first: 5) { nodes { body } } } } }',
      );
      expect(heavy.error).toEqual([
        expect.objectContaining({
          message: expect.stringMatching(/maximum of 100 for a subscription/),
          extensions: expect.objectContaining({
            code: 'QUERY_TOO_COMPLEX',
            cost: { requested: 1 + (1 + (1 + 5 * (1 + 20))), limit: 100 },
          }),
        }),
      ]);
    } finally {
      s.close();
    }
  });

  it('charges every event against the budget and ends the subscription with RATE_LIMITED when it is spent', async () => {
    const alice = await createUser(t.url, { name: 'Alice Events' });
    const roomRes = await gql(t.url, 'mutation($n: String!) { createRoom(name: $n) { id } }', {
      auth: { bearer: admin },
      variables: { n: `events-${Date.now()}` },
    });
    const room = roomRes.body.data.createRoom.id as string;
    const s = await openSocket(t.url, { Authorization: `Bearer ${alice.token}` });
    try {
      s.subscribe('sub', 'subscription($r: ID!) { messageAdded(roomId: $r) { id content } }', {
        r: room,
      });
      await listening(t, TOPICS.messageAdded(room));
      for (let i = 0; i < 8; i++) {
        const sent = await gql(
          t.url,
          'mutation($r: ID!, $c: String!) { sendMessage(roomId: $r, content: $c) { id } }',
          { auth: { bearer: admin }, variables: { r: room, c: `m${i}` } },
        );
        expect(sent.body.errors).toBeUndefined();
      }
      await s.waitFor((f) => f.id === 'sub' && f.type === 'complete');
      const nexts = s.frames.filter((f) => f.id === 'sub' && f.type === 'next');
      expect(nexts.slice(0, 6).map((f) => f.payload.data?.messageAdded.content)).toEqual([
        'm0',
        'm1',
        'm2',
        'm3',
        'm4',
        'm5',
      ]);
      expect(nexts).toHaveLength(7);
      expect(nexts[6]?.payload).toEqual({
        errors: [
          expect.objectContaining({
            message: expect.stringMatching(/budget exhausted/),
            extensions: { code: 'RATE_LIMITED' },
          }),
        ],
      });
    } finally {
      s.close();
    }
  });
});

describe('"Did you mean" hints follow the introspection switch', () => {
  let t: TestApp;
  let alice: CreatedUser;
  beforeAll(async () => {
    t = await startApp({ GRAPHQL_INTROSPECTION: 'false', GRAPHQL_DEVELOPMENT: 'true' });
    alice = await createUser(t.url, { name: 'Alice Hints' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('gives no hints over HTTP or WebSocket when introspection is off, even in development', async () => {
    const res = await gql(t.url, '{ me { nam } }', { auth: { bearer: alice.token } });
    expect(codes(res.body)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(res.body.errors?.[0]?.message).toMatch(/Cannot query field "nam"/);
    expect(JSON.stringify(res.body)).not.toMatch(/Did you mean/);
    const s = await openSocket(t.url, { Authorization: `Bearer ${alice.token}` });
    try {
      const ws = await s.run('{ me { nam } }');
      expect(ws.error?.[0]?.message).toMatch(/Cannot query field "nam"/);
      expect(JSON.stringify(ws.error)).not.toMatch(/Did you mean/);
    } finally {
      s.close();
    }
  });
});
