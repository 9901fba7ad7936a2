import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '../src/events/events.service.js';
import { MetricsService } from '../src/metrics/metrics.service.js';
import { startApp, startPair, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createApiKey,
  createUser,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import { request, type Client, type TestResponse } from './helpers/http.js';
import { waitFor } from './helpers/wait.js';
import { gql, type GqlBody } from './graphql-client.js';
import { connect, listening, newRoom, subscribe } from './subscriptions-helpers.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const ME = 'query Me { me { id } }';
const POST_TITLE = 'query PostTitle($id: ID!) { post(id: $id) { id title } }';
const MESSAGES =
  'subscription Messages($roomId: ID!) { messageAdded(roomId: $roomId) { id content } }';

const MANIFEST = {
  format: 'apollo-persisted-query-manifest',
  version: 1,
  operations: [
    { id: 'me-v1', name: 'Me', type: 'query', body: ME },
    { id: sha256(POST_TITLE), name: 'PostTitle', type: 'query', body: POST_TITLE },
    { id: sha256(MESSAGES), name: 'Messages', type: 'subscription', body: MESSAGES },
  ],
};

const dir = mkdtempSync(join(tmpdir(), 'atrium-trusted-'));
function manifestFile(content: unknown): string {
  const path = join(dir, `${unique('m')}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

function byDocumentId(
  base: string,
  documentId: string,
  token: string,
  opts: { method?: 'GET' | 'POST'; variables?: object; accept?: string } = {},
): Promise<TestResponse<GqlBody>> {
  const headers = opts.accept ? { accept: opts.accept } : undefined;
  if (opts.method === 'GET') {
    const params = new URLSearchParams({ documentId });
    if (opts.variables) {
      params.set('variables', JSON.stringify(opts.variables));
    }
    return request<GqlBody>(base, `/graphql?${params.toString()}`, {
      method: 'GET',
      auth: { bearer: token },
      headers,
    });
  }
  return request<GqlBody>(base, '/graphql', {
    method: 'POST',
    auth: { bearer: token },
    headers,
    body: { documentId, variables: opts.variables },
  });
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('trusted documents, enforce mode', () => {
  let t: TestApp;
  let user: CreatedUser;
  let admin: Client;

  beforeAll(async () => {
    t = await startApp({
      GRAPHQL_TRUSTED_DOCUMENTS: manifestFile(MANIFEST),
      GRAPHQL_TRUSTED_DOCUMENTS_MODE: 'enforce',
    });
    user = await createUser(t.url);
    admin = await adminClient(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses a first-party free-text operation before execution (PERSISTED_QUERY_NOT_LISTED)', async () => {
    const res = await gql(t.url, '{ me { id } }', { auth: { bearer: user.token } });
    expect(res.status).toBe(200);
    expect(res.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_LISTED');
    expect(res.body.data).toBeUndefined();
    const strict = await gql(t.url, '{ me { id } }', {
      auth: { bearer: user.token },
      headers: { accept: 'application/graphql-response+json' },
    });
    expect(strict.status).toBe(400);

    // a mutation is refused before it runs: nothing is created
    const title = unique('refused-');
    const mutation = await gql(
      t.url,
      `mutation { createPost(input: { title: "${title}", body: "x" }) { id } }`,
      { auth: { bearer: user.token } },
    );
    expect(mutation.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_LISTED');
    const posts = await user.client.get('/api/v1/posts?limit=100');
    expect(posts.status).toBe(200);
    expect(JSON.stringify(posts.body)).not.toContain(title);
  });

  it('runs a listed document by documentId, POST and GET, and by its APQ hash without registering it', async () => {
    const post = await byDocumentId(t.url, 'me-v1', user.token);
    expect(post.body).toEqual(expect.objectContaining({ data: { me: { id: user.id } } }));
    const created = await user.client.post('/api/v1/posts', { title: 'trusted', body: 'b' });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    const get = await byDocumentId(t.url, sha256(POST_TITLE), user.token, {
      method: 'GET',
      variables: { id },
    });
    expect(get.body.data, JSON.stringify(get.body)).toEqual({ post: { id, title: 'trusted' } });
    expect(get.headers.get('cache-control')).toBe('max-age=60, private');
    const params = new URLSearchParams({
      extensions: JSON.stringify({ persistedQuery: { version: 1, sha256Hash: sha256(ME) } }),
    });
    const apq = await request<GqlBody>(t.url, `/graphql?${params.toString()}`, {
      method: 'GET',
      auth: { bearer: user.token },
    });
    expect(apq.body.data).toEqual({ me: { id: user.id } });
    // the same text sent as is is listed too
    expect((await gql(t.url, ME, { auth: { bearer: user.token } })).body.data).toEqual({
      me: { id: user.id },
    });
  });

  it('answers PERSISTED_QUERY_NOT_FOUND for an unknown documentId', async () => {
    for (const method of ['POST', 'GET'] as const) {
      const res = await byDocumentId(t.url, 'no-such-document', user.token, { method });
      expect(res.status).toBe(200);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      expect(res.body.data).toBeUndefined();
    }
    const strict = await byDocumentId(t.url, 'no-such-document', user.token, {
      accept: 'application/graphql-response+json',
    });
    expect(strict.status).toBe(400);
  });

  it('lets an API key send free text, under the cost limits', async () => {
    const key = await createApiKey(admin);
    const res = await gql(t.url, '{ me { id } }', { auth: { apiKey: key.key } });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.me.id).toEqual(expect.any(String));
    const tooCostly = await gql(t.url, '{ posts(first: 100) { body } }', {
      auth: { apiKey: key.key },
    });
    expect(tooCostly.body.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');
  });

  it('applies the same gate over WebSocket: free text refused, the listed subscription runs', async () => {
    const room = await newRoom(user);
    const socket = await connect(t.url, { bearer: user.token });
    try {
      const refused = subscribe(
        socket,
        'subscription($roomId: ID!) { messageAdded(roomId: $roomId) { id } }',
        { roomId: room },
      );
      const error = (await refused.waitForError()) as { extensions?: { code?: string } }[];
      expect(error[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_LISTED');
      const sub = subscribe(socket, MESSAGES, { roomId: room });
      await listening(t, TOPICS.messageAdded(room));
      const sent = await user.client.post(`/api/v1/rooms/${room}/messages`, { content: 'hi' });
      expect(sent.status).toBe(201);
      expect(await sub.waitFor(1)).toEqual([
        { messageAdded: { id: sent.body.data.id, content: 'hi' } },
      ]);
      sub.stop();
    } finally {
      await socket.dispose();
    }
  });

  it('GET returns the manifest (ADMIN); PUT validates, replaces and audits it', async () => {
    const got = await admin.get('/api/v1/graphql/trusted-documents');
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({ ...MANIFEST, manifest_version: 1 });
    expect((await request(t.url, '/api/v1/graphql/trusted-documents')).status).toBe(401);
    expect(
      (await request(t.url, '/api/v1/graphql/trusted-documents', { method: 'PUT', body: MANIFEST }))
        .status,
    ).toBe(401);
    expect((await user.client.get('/api/v1/graphql/trusted-documents')).status).toBe(403);
    expect((await user.client.put('/api/v1/graphql/trusted-documents', MANIFEST)).status).toBe(403);

    const bad = await admin.put('/api/v1/graphql/trusted-documents', {
      ...MANIFEST,
      operations: [
        { id: 'a', name: 'A', type: 'query', body: '{ me { id } ' },
        { id: 'a', name: 'B', type: 'query', body: '{ me { nope } }' },
        { id: 'c', name: 'C', type: 'mutation', body: '{ me { id } }' },
      ],
    });
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('validation_failed');
    expect(bad.body.error.details.map((d: { field: string }) => d.field)).toEqual([
      'operations[0].body',
      'operations[1].id',
      'operations[1].body',
      'operations[2].body',
    ]);
    expect((await admin.get('/api/v1/graphql/trusted-documents')).body.data.manifest_version).toBe(
      1,
    );

    const NAME = 'query Name { me { id name } }';
    const next = {
      ...MANIFEST,
      operations: [
        ...MANIFEST.operations,
        { id: 'name-v1', name: 'Name', type: 'query', body: NAME },
      ],
    };
    const put = await admin.put('/api/v1/graphql/trusted-documents', next);
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ ...next, manifest_version: 2 });
    // If-Match: the ETag GET sends; a stale one is 412 and changes nothing
    const etag = put.headers.get('etag');
    expect(etag).toBe((await admin.get('/api/v1/graphql/trusted-documents')).headers.get('etag'));
    const stale = await admin.put('/api/v1/graphql/trusted-documents', MANIFEST, {
      headers: { 'if-match': got.headers.get('etag') ?? '' },
    });
    expect(stale.status).toBe(412);
    expect(stale.body.error.code).toBe('precondition_failed');
    expect((await admin.get('/api/v1/graphql/trusted-documents')).body.data.manifest_version).toBe(
      2,
    );
    const matching = await admin.put('/api/v1/graphql/trusted-documents', next, {
      headers: { 'if-match': etag ?? '' },
    });
    expect(matching.status).toBe(200);
    expect(matching.body.data.manifest_version).toBe(3);
    const runs = await byDocumentId(t.url, 'name-v1', user.token);
    expect(runs.body.data.me.id).toBe(user.id);
    const audit = await admin.get(
      '/api/v1/audit-events?action=graphql.trusted_documents_replaced&limit=10',
    );
    expect(audit.status).toBe(200);
    expect(audit.body.data[0]).toMatchObject({
      action: 'graphql.trusted_documents_replaced',
      target: { type: 'graphql_manifest', id: '3' },
      changes: { operations: [4, 4] },
    });
  });
});

describe('trusted documents, audit mode', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({
      GRAPHQL_TRUSTED_DOCUMENTS: manifestFile(MANIFEST),
      GRAPHQL_TRUSTED_DOCUMENTS_MODE: 'audit',
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('runs free text and counts each unlisted operation per client', async () => {
    const user = await createUser(t.url);
    const metric = async () =>
      (await t.app
        .get(MetricsService)
        .registry.getSingleMetricAsString('atrium_graphql_untrusted_operations_total')) ?? '';
    const count = async (client: string) =>
      Number(new RegExp(`client="${client}"} (\\d+)`).exec(await metric())?.[1] ?? '0');
    const before = await count('first-party');
    const res = await gql(t.url, '{ me { id } }', { auth: { bearer: user.token } });
    expect(res.body.data).toEqual({ me: { id: user.id } });
    await gql(t.url, '{ me { id } }', { auth: { bearer: user.token } });
    expect(await count('first-party')).toBe(before + 2);
    // a listed document is not counted
    await gql(t.url, ME, { auth: { bearer: user.token } });
    expect(await count('first-party')).toBe(before + 2);
  });
});

describe('trusted documents at boot', () => {
  it('fails the boot with a clear message when the manifest file is not valid', async () => {
    const broken = manifestFile({
      ...MANIFEST,
      operations: [{ id: 'x', name: 'X', type: 'query', body: '{ nope }' }],
    });
    await expect(startApp({ GRAPHQL_TRUSTED_DOCUMENTS: broken })).rejects.toThrow(
      /GRAPHQL_TRUSTED_DOCUMENTS: .* is not a valid persisted query manifest .*operations\[0\]\.body does not validate/,
    );
    await expect(
      startApp({ GRAPHQL_TRUSTED_DOCUMENTS: manifestFile('{ not json') }),
    ).rejects.toThrow(/GRAPHQL_TRUSTED_DOCUMENTS: cannot read .* as JSON/);
  });
});

describe('trusted documents across instances', () => {
  it('a replacement through instance A is served by instance B', async () => {
    const pair = await startPair({
      GRAPHQL_TRUSTED_DOCUMENTS: manifestFile(MANIFEST),
      GRAPHQL_TRUSTED_DOCUMENTS_MODE: 'enforce',
    });
    try {
      const user = await createUser(pair.a.url);
      const admin = await adminClient(pair.a.url);
      const NAME = 'query Name2 { me { name } }';
      expect(
        (await byDocumentId(pair.b.url, 'name-v2', user.token)).body.errors?.[0]?.extensions?.code,
      ).toBe('PERSISTED_QUERY_NOT_FOUND');
      const put = await admin.put('/api/v1/graphql/trusted-documents', {
        ...MANIFEST,
        operations: [{ id: 'name-v2', name: 'Name2', type: 'query', body: NAME }],
      });
      expect(put.status).toBe(200);
      const onB = await waitFor(
        async () => {
          const res = await byDocumentId(pair.b.url, 'name-v2', user.token);
          return res.body.data ? res : undefined;
        },
        { what: 'instance B to serve the new manifest' },
      );
      expect(onB.body.data).toEqual({ me: { name: expect.any(String) } });
      // and B no longer lists what the replacement dropped
      expect(
        (await byDocumentId(pair.b.url, 'me-v1', user.token)).body.errors?.[0]?.extensions?.code,
      ).toBe('PERSISTED_QUERY_NOT_FOUND');
    } finally {
      await pair.close();
    }
  });
});
