import { composeServices } from '@apollo/composition';
import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '../src/events/events.service.js';
import { startApp, type TestApp } from './helpers/app.js';
import { createUser, unique, type CreatedUser } from './helpers/factories.js';
import { gql } from './graphql-client.js';
import { connect, listening, newRoom, subscribe } from './subscriptions-helpers.js';

/** A second, small subgraph: reviews of Atrium's posts by Atrium's users. */
const REVIEWS_SDL = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key"])
  type Review @key(fields: "id") {
    id: ID!
    stars: Int!
    post: Post!
    author: User!
  }
  type Post @key(fields: "id") {
    id: ID!
    reviews: [Review!]!
  }
  type User @key(fields: "id", resolvable: false) {
    id: ID!
  }
  type Query {
    topReviews(first: Int = 10): [Review!]!
  }
`;

const ENTITIES = `query($r: [_Any!]!) {
  _entities(representations: $r) {
    __typename
    ... on User { id name email }
    ... on Post { id title }
    ... on Order { id status }
    ... on Room { id name }
    ... on Message { id content }
  }
}`;

const NODE = `query($id: ID!) {
  node(id: $id) {
    __typename
    ... on User { id name email }
    ... on Post { id title }
    ... on Order { id status }
    ... on Room { id name }
    ... on Message { id content }
  }
}`;

describe('Apollo Federation 2 subgraph (GRAPHQL_FEDERATION=true)', () => {
  let t: TestApp;
  let alice: CreatedUser;
  let bob: CreatedUser;
  let sdl: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await startApp({ GRAPHQL_FEDERATION: 'true' });
    alice = await createUser(t.url);
    bob = await createUser(t.url);
    const post = await alice.client.post('/api/v1/posts', { title: 'federated', body: 'b' });
    expect(post.status).toBe(201);
    ids.post = post.body.data.id;
    ids.room = await newRoom(alice);
    const message = await alice.client.post(`/api/v1/rooms/${ids.room}/messages`, {
      content: 'hello',
    });
    expect(message.status).toBe(201);
    ids.message = message.body.data.id;
    const order = await alice.client.post(`/api/v1/users/${alice.id}/orders`, {
      items: [{ sku: 'BOOK-1', quantity: 1, unit_price_cents: 100 }],
      currency: 'EUR',
    });
    expect(order.status, order.text).toBe(201);
    ids.order = order.body.data.id;
    const res = await gql(t.url, '{ _service { sdl } }', { auth: { bearer: alice.token } });
    expect(res.body.errors).toBeUndefined();
    sdl = res.body.data._service.sdl as string;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers _service { sdl } with @link to Federation 2 and @key(fields: "id") on the five entities', () => {
    expect(sdl).toMatch(/@link\(url: "https:\/\/specs\.apollo\.dev\/federation\/v2\.9"/);
    for (const type of ['User', 'Post', 'Order', 'Room', 'Message']) {
      expect(sdl).toMatch(new RegExp(`type ${type} implements Node[^{]*@key\\(fields: "id"\\)`));
    }
    expect(sdl).toMatch(/body: String! @cost\(weight: 20\)/);
    expect(sdl).not.toMatch(/@cost\(complexity/);
  });

  it('composes with a second subgraph (@apollo/composition) without errors', () => {
    const result = composeServices([
      { name: 'atrium', typeDefs: parse(sdl), url: `${t.url}/graphql` },
      { name: 'reviews', typeDefs: parse(REVIEWS_SDL), url: 'http://reviews.test/graphql' },
    ]);
    expect(result.errors?.map((e) => e.message)).toBeUndefined();
    expect(result.supergraphSdl).toMatch(/type Post[\s\S]*@join__type\(graph: ATRIUM, key: "id"\)/);
    expect(result.supergraphSdl).toMatch(/reviews: \[Review!\]! @join__field\(graph: REVIEWS\)/);
  });

  it('resolves each entity through _entities exactly as node(id) does, for the owner and for another user', async () => {
    const cases: [string, string][] = [
      ['User', alice.id],
      ['User', bob.id],
      ['Post', ids.post],
      ['Order', ids.order],
      ['Room', ids.room],
      ['Message', ids.message],
    ];
    let seenNull = false;
    for (const who of [alice, bob]) {
      for (const [typename, id] of cases) {
        const node = await gql(t.url, NODE, { auth: { bearer: who.token }, variables: { id } });
        const entities = await gql(t.url, ENTITIES, {
          auth: { bearer: who.token },
          variables: { r: [{ __typename: typename, id }] },
        });
        const label = `${typename} ${id} as ${who === alice ? 'alice' : 'bob'}`;
        // node() throws NOT_FOUND where _entities answers null (the router's convention)
        expect(entities.body.data?._entities?.[0] ?? null, label).toEqual(
          node.body.data?.node ?? null,
        );
        seenNull ||= (node.body.data?.node ?? null) === null;
      }
    }
    // bob may not read alice's order: both lookups give nothing
    expect(seenNull).toBe(true);
  });

  it('answers null for an unknown id and for an id of another type', async () => {
    const res = await gql(t.url, ENTITIES, {
      auth: { bearer: alice.token },
      variables: {
        r: [
          { __typename: 'Post', id: alice.id },
          { __typename: 'User', id: 'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV' },
          { __typename: 'Post', id: ids.post },
        ],
      },
    });
    expect(res.body.data._entities).toEqual([
      null,
      null,
      { __typename: 'Post', id: ids.post, title: 'federated' },
    ]);
    // no error: a missing entity is a null (the router's convention), not a NOT_FOUND
    expect(res.body.errors).toBeUndefined();
  });

  it('refuses anonymous _entities and _service like any non-introspection query (401)', async () => {
    for (const query of ['{ _service { sdl } }', ENTITIES]) {
      const res = await gql(t.url, query, {
        variables: query === ENTITIES ? { r: [{ __typename: 'Post', id: ids.post }] } : undefined,
        headers: { accept: 'application/graphql-response+json' },
      });
      expect(res.status).toBe(401);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      expect(res.body.data).toBeUndefined();
    }
  });

  it('costs _entities as many node(id) selections as it has representations', async () => {
    const query =
      'query($r: [_Any!]!) { _entities(representations: $r) { ... on User { id name } } }';
    const three = await gql(t.url, query, {
      auth: { bearer: alice.token },
      variables: { r: [alice.id, bob.id, alice.id].map((id) => ({ __typename: 'User', id })) },
    });
    expect(three.body.errors).toBeUndefined();
    expect(three.body.extensions?.cost?.requested).toBe(1 + 3 * 2);
    const node = await gql(t.url, `{ node(id: "${alice.id}") { ... on User { id name } } }`, {
      auth: { bearer: alice.token },
    });
    expect(node.body.extensions?.cost?.requested).toBe(1 + 2);
    const many = await gql(t.url, query, {
      auth: { bearer: alice.token },
      variables: { r: Array.from({ length: 600 }, () => ({ __typename: 'User', id: alice.id })) },
    });
    expect(many.body.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');
    expect(many.body.data).toBeUndefined();
  });

  it('keeps subscriptions working on the subgraph endpoint (graphql-ws)', async () => {
    const socket = await connect(t.url, { bearer: bob.token });
    try {
      const sub = subscribe(
        socket,
        'subscription($roomId: ID!) { messageAdded(roomId: $roomId) { id content } }',
        { roomId: ids.room },
      );
      await listening(t, TOPICS.messageAdded(ids.room));
      const content = `over ws ${unique()}`;
      const sent = await alice.client.post(`/api/v1/rooms/${ids.room}/messages`, { content });
      expect(sent.status).toBe(201);
      const events = await sub.waitFor(1);
      expect(sub.errors).toEqual([]);
      expect(events[0]).toEqual({ messageAdded: { id: sent.body.data.id, content } });
      sub.stop();
    } finally {
      await socket.dispose();
    }
  });
});

describe('without GRAPHQL_FEDERATION', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('has no _service or _entities field', async () => {
    const user = await createUser(t.url);
    const res = await gql(t.url, '{ _service { sdl } }', { auth: { bearer: user.token } });
    expect(res.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(res.body.data).toBeUndefined();
  });
});
