import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from '../generated/openapi.js';

/**
 * What a frontend writes against the generated types (test/generated/openapi.d.ts, from
 * `npm run openapi:types`) with openapi-fetch: the typical call of every operation of the document,
 * in an order that makes each one succeed. test/openapi-typed-client.e2e-spec.ts compiles this file
 * on its own with `tsc --strict`, refuses casts, non-null assertions, `any` and `@ts-` comments in
 * it, checks that every operation of the document has a call here, and runs it against the app.
 * It imports nothing but openapi-fetch and the generated types, as a client application would.
 */

type Schemas = components['schemas'];

/** One answer the program received: the operation (as the document names it) and its status. */
export interface Call {
  method: string;
  path: string;
  status: number;
}

export interface ProgramOptions {
  baseUrl: string;
  /** The fetch the clients use (the test's checks every response against the document). */
  fetch: (request: Request) => Promise<Response>;
  admin: { email: string; password: string };
  /** Where the webhook endpoint the program registers points (a receiver the app may reach). */
  webhookUrl: string;
  /** Signs the admin in to `client` in a browser and grants it its scopes (the OAuth flow). */
  authorizeApp: (client: Schemas['CreatedOAuthClient']) => Promise<void>;
}

export interface ProgramResult {
  calls: Call[];
  user: Schemas['User'];
  order: Schemas['Order'];
  message: Schemas['Message'];
  post: Schemas['Post'];
  batch: Schemas['BatchResult'][];
  grants: Schemas['AuthorizedApp'][];
}

class UnexpectedAnswer extends Error {}

/** The value, or an error naming what was missing (narrowing, not a cast). */
function need<T>(value: T | undefined | null, what: string): T {
  if (value === undefined || value === null) {
    throw new UnexpectedAnswer(`${what}: missing`);
  }
  return value;
}

function expectStatus(response: Response, status: number, what: string): void {
  if (response.status !== status) {
    throw new UnexpectedAnswer(`${what}: expected ${status}, got ${response.status}`);
  }
}

function unique(): string {
  return `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
}

export async function runProgram(options: ProgramOptions): Promise<ProgramResult> {
  const calls: Call[] = [];
  const record: Middleware = {
    onResponse({ request, response, schemaPath }) {
      calls.push({ method: request.method, path: schemaPath, status: response.status });
      return undefined;
    },
  };
  const anonymous = createClient<paths>({ baseUrl: options.baseUrl, fetch: options.fetch });
  anonymous.use(record);

  // health probes
  const live = await anonymous.GET('/health/live');
  expectStatus(live.response, 200, 'GET /health/live');
  const ready = await anonymous.GET('/health/ready');
  expectStatus(ready.response, 200, 'GET /health/ready');
  // the pointers a newcomer finds at the root and at the API's base
  const root = await anonymous.GET('/');
  expectStatus(root.response, 200, 'GET /');
  const base = await anonymous.GET('/api/v1');
  expectStatus(base.response, 200, 'GET /api/v1');

  // sign in, refresh
  const signedIn = await anonymous.POST('/api/v1/auth/token', { body: options.admin });
  expectStatus(signedIn.response, 200, 'POST /auth/token');
  const first: Schemas['TokenPair'] = need(signedIn.data, 'token pair');
  const refreshed = await anonymous.POST('/api/v1/auth/refresh', {
    body: { refresh_token: first.refresh_token },
  });
  expectStatus(refreshed.response, 200, 'POST /auth/refresh');
  const tokens = need(refreshed.data, 'refreshed pair');
  // a second sign-in, signed out again
  const spare = need(
    (await anonymous.POST('/api/v1/auth/token', { body: options.admin })).data,
    'pair',
  );
  const signedOut = await anonymous.POST('/api/v1/auth/logout', {
    body: { refresh_token: spare.refresh_token },
  });
  expectStatus(signedOut.response, 204, 'POST /auth/logout');

  const api = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    headers: { authorization: `${tokens.token_type} ${tokens.access_token}` },
  });
  api.use(record);

  // who am I, then the same again conditionally: 304 without a body
  const me = await api.GET('/api/v1/auth/me');
  expectStatus(me.response, 200, 'GET /auth/me');
  const meEtag = need(me.response.headers.get('etag'), 'ETag of /auth/me');
  const meAgain = await api.GET('/api/v1/auth/me', {
    params: { header: { 'If-None-Match': meEtag } },
  });
  expectStatus(meAgain.response, 304, 'GET /auth/me with If-None-Match');
  if (meAgain.data !== undefined) {
    throw new UnexpectedAnswer('304 with a body');
  }

  // self-service sign-up (public, idempotent)
  const registered = await anonymous.POST('/api/v1/auth/register', {
    params: { header: { 'Idempotency-Key': `register-${unique()}` } },
    body: {
      name: 'Reggie Typed',
      email: `reg-${unique()}@example.com`,
      password: `pw-${unique()}-long`,
    },
  });
  expectStatus(registered.response, 201, 'POST /auth/register');
  const registeredUser = need(registered.data, 'registered user').data;

  // API keys: create one that expires, list, get, revoke
  const keyCreated = await api.POST('/api/v1/api-keys', {
    body: {
      name: 'typed dashboard',
      role: 'USER',
      expires_at: new Date(Date.now() + 86_400_000).toISOString(),
    },
  });
  expectStatus(keyCreated.response, 201, 'POST /api-keys');
  const key = need(keyCreated.data, 'created key').data;
  const keys = await api.GET('/api/v1/api-keys', {
    params: { query: { sort: '-created_at', limit: 10 } },
  });
  expectStatus(keys.response, 200, 'GET /api-keys');
  const keyGot = await api.GET('/api/v1/api-keys/{id}', { params: { path: { id: key.id } } });
  expectStatus(keyGot.response, 200, 'GET /api-keys/{id}');
  const keyRevoked = await api.DELETE('/api/v1/api-keys/{id}', {
    params: { path: { id: key.id } },
  });
  expectStatus(keyRevoked.response, 204, 'DELETE /api-keys/{id}');

  // users: create (idempotent), batch, list, get, replace with If-Match, patch
  const created = await api.POST('/api/v1/users', {
    params: { header: { 'Idempotency-Key': `user-${unique()}` } },
    body: {
      name: 'Typed Tess',
      email: `tess-${unique()}@example.com`,
      role: 'USER',
      age: 30,
      password: `pw-${unique()}-long`,
    },
  });
  expectStatus(created.response, 201, 'POST /users');
  const tess = need(created.data, 'created user').data;
  need(created.response.headers.get('location'), 'Location of the new user');

  const batched = await api.POST('/api/v1/users/batch', {
    params: { header: { 'Idempotency-Key': `batch-${unique()}` } },
    body: {
      operations: [
        { op: 'create', data: { name: 'Batch Bea', email: `bea-${unique()}@example.com` } },
        { op: 'update', id: registeredUser.id, data: { age: 41 } },
      ],
    },
  });
  expectStatus(batched.response, 200, 'POST /users/batch');
  const batch = need(batched.data, 'batch results').data;

  const users = await api.GET('/api/v1/users', {
    params: { query: { role: 'USER', sort: '-created_at,name', page: 1, limit: 100 } },
  });
  expectStatus(users.response, 200, 'GET /users');
  const usersPage = need(users.data, 'users page');
  if (!usersPage.data.some((u) => u.id === tess.id) || usersPage.meta.limit !== 100) {
    throw new UnexpectedAnswer('GET /users: the new user is not on the first page');
  }

  const got = await api.GET('/api/v1/users/{id}', { params: { path: { id: tess.id } } });
  expectStatus(got.response, 200, 'GET /users/{id}');
  const tessEtag = need(got.response.headers.get('etag'), 'ETag of the user');
  const replaced = await api.PUT('/api/v1/users/{id}', {
    params: { path: { id: tess.id }, header: { 'if-match': tessEtag } },
    body: { name: 'Tess Typed', email: tess.email ?? `tess-${unique()}@example.com`, age: 31 },
  });
  expectStatus(replaced.response, 200, 'PUT /users/{id}');
  const patched = await api.PATCH('/api/v1/users/{id}', {
    params: { path: { id: tess.id } },
    body: { age: null },
  });
  expectStatus(patched.response, 200, 'PATCH /users/{id}');
  const user = need(patched.data, 'patched user').data;

  // orders of Tess: create, list by status, get, pay
  const ordered = await api.POST('/api/v1/users/{id}/orders', {
    params: { path: { id: tess.id }, header: { 'Idempotency-Key': `order-${unique()}` } },
    body: {
      items: [
        { sku: 'BOOK-0042', quantity: 2, unit_price_cents: 1250 },
        { sku: 'PEN-7', quantity: 1, unit_price_cents: 300 },
      ],
      currency: 'EUR',
    },
  });
  expectStatus(ordered.response, 201, 'POST /users/{id}/orders');
  const newOrder = need(ordered.data, 'created order').data;
  const orders = await api.GET('/api/v1/users/{id}/orders', {
    params: { path: { id: tess.id }, query: { status: 'pending', sort: '-created_at' } },
  });
  expectStatus(orders.response, 200, 'GET /users/{id}/orders');
  const orderGot = await api.GET('/api/v1/orders/{id}', { params: { path: { id: newOrder.id } } });
  expectStatus(orderGot.response, 200, 'GET /orders/{id}');
  const paid = await api.PATCH('/api/v1/orders/{id}', {
    params: {
      path: { id: newOrder.id },
      header: { 'if-match': need(orderGot.response.headers.get('etag'), 'ETag of the order') },
    },
    body: { status: 'paid' },
  });
  expectStatus(paid.response, 200, 'PATCH /orders/{id}');
  const order = need(paid.data, 'paid order').data;

  // rooms and messages
  const roomCreated = await api.POST('/api/v1/rooms', {
    params: { header: { 'Idempotency-Key': `room-${unique()}` } },
    body: { name: `typed-${unique()}` },
  });
  expectStatus(roomCreated.response, 201, 'POST /rooms');
  const room = need(roomCreated.data, 'created room').data;
  const rooms = await api.GET('/api/v1/rooms', { params: { query: { limit: 5 } } });
  expectStatus(rooms.response, 200, 'GET /rooms');
  const roomGot = await api.GET('/api/v1/rooms/{id}', { params: { path: { id: room.id } } });
  expectStatus(roomGot.response, 200, 'GET /rooms/{id}');
  const sent = await api.POST('/api/v1/rooms/{id}/messages', {
    params: { path: { id: room.id }, header: { 'Idempotency-Key': `message-${unique()}` } },
    body: { content: 'Hello from a typed client' },
  });
  expectStatus(sent.response, 201, 'POST /rooms/{id}/messages');
  const message = need(sent.data, 'sent message').data;
  const messages = await api.GET('/api/v1/rooms/{id}/messages', {
    params: { path: { id: room.id }, query: { sort: 'created_at', limit: 50 } },
  });
  expectStatus(messages.response, 200, 'GET /rooms/{id}/messages');
  if (!need(messages.data, 'messages').data.some((m) => m.id === message.id)) {
    throw new UnexpectedAnswer('GET /rooms/{id}/messages: the message is not listed');
  }

  // posts: create, list by author, get, replace, patch, delete
  const posted = await api.POST('/api/v1/posts', {
    params: { header: { 'Idempotency-Key': `post-${unique()}` } },
    body: { title: 'Typed notes', body: 'Written by a typed client.' },
  });
  expectStatus(posted.response, 201, 'POST /posts');
  const newPost = need(posted.data, 'created post').data;
  const posts = await api.GET('/api/v1/posts', {
    params: { query: { author_id: newPost.author_id, sort: '-created_at', limit: 10 } },
  });
  expectStatus(posts.response, 200, 'GET /posts');
  const postGot = await api.GET('/api/v1/posts/{id}', { params: { path: { id: newPost.id } } });
  expectStatus(postGot.response, 200, 'GET /posts/{id}');
  const postReplaced = await api.PUT('/api/v1/posts/{id}', {
    params: {
      path: { id: newPost.id },
      header: { 'if-match': need(postGot.response.headers.get('etag'), 'ETag of the post') },
    },
    body: { title: 'Typed notes, revised', body: 'Rewritten by a typed client.' },
  });
  expectStatus(postReplaced.response, 200, 'PUT /posts/{id}');
  const postPatched = await api.PATCH('/api/v1/posts/{id}', {
    params: { path: { id: newPost.id } },
    body: { title: 'Typed notes, final' },
  });
  expectStatus(postPatched.response, 200, 'PATCH /posts/{id}');
  const post = need(postPatched.data, 'patched post').data;
  const postDeleted = await api.DELETE('/api/v1/posts/{id}', {
    params: { path: { id: newPost.id } },
  });
  expectStatus(postDeleted.response, 204, 'DELETE /posts/{id}');

  // OAuth: register a partner app, authorize it, list and revoke the grant, delete the app
  const clientCreated = await api.POST('/api/v1/oauth/clients', {
    body: {
      name: 'Typed partner',
      redirect_uris: ['https://partner.example/callback'],
      scopes: ['openid', 'users:read'],
      public: false,
    },
  });
  expectStatus(clientCreated.response, 201, 'POST /oauth/clients');
  const partner = need(clientCreated.data, 'created OAuth client').data;
  const clients = await api.GET('/api/v1/oauth/clients', { params: { query: { limit: 10 } } });
  expectStatus(clients.response, 200, 'GET /oauth/clients');
  const clientGot = await api.GET('/api/v1/oauth/clients/{client_id}', {
    params: { path: { client_id: partner.client_id } },
  });
  expectStatus(clientGot.response, 200, 'GET /oauth/clients/{client_id}');
  await options.authorizeApp(partner);
  const granted = await api.GET('/api/v1/oauth/grants');
  expectStatus(granted.response, 200, 'GET /oauth/grants');
  const grants = need(granted.data, 'grants').data;
  const revoked = await api.DELETE('/api/v1/oauth/grants/{client_id}', {
    params: { path: { client_id: partner.client_id } },
  });
  expectStatus(revoked.response, 204, 'DELETE /oauth/grants/{client_id}');
  const clientEdited = await api.PATCH('/api/v1/oauth/clients/{client_id}', {
    params: { path: { client_id: partner.client_id } },
    body: { name: 'Typed partner, renamed', logo_uri: 'https://partner.example/logo.png' },
  });
  expectStatus(clientEdited.response, 200, 'PATCH /oauth/clients/{client_id}');
  const rotated = await api.POST('/api/v1/oauth/clients/{client_id}/secret', {
    params: { path: { client_id: partner.client_id } },
  });
  expectStatus(rotated.response, 200, 'POST /oauth/clients/{client_id}/secret');
  need(need(rotated.data, 'rotated secret').data.client_secret, 'the new client_secret');
  const clientDeleted = await api.DELETE('/api/v1/oauth/clients/{client_id}', {
    params: { path: { client_id: partner.client_id } },
  });
  expectStatus(clientDeleted.response, 204, 'DELETE /oauth/clients/{client_id}');

  // admin dashboards: the orders of every user, the exports, the audit log
  const allOrders = await api.GET('/api/v1/orders', {
    params: { query: { status: 'pending', sort: '-total_cents', limit: 5 } },
  });
  expectStatus(allOrders.response, 200, 'GET /orders');
  need(allOrders.data, 'orders across users');
  const ordersExport = await api.GET('/api/v1/orders/export', {
    params: { query: { status: 'pending' } },
    parseAs: 'text',
  });
  expectStatus(ordersExport.response, 200, 'GET /orders/export');
  const usersExport = await api.GET('/api/v1/users/export', {
    params: { query: { role: 'USER' } },
    parseAs: 'text',
  });
  expectStatus(usersExport.response, 200, 'GET /users/export');
  const audit = await api.GET('/api/v1/audit-events', {
    params: { query: { action: 'user.created', limit: 5 } },
  });
  expectStatus(audit.response, 200, 'GET /audit-events');
  need(audit.data, 'audit events');
  const deprecations = await api.GET('/api/v1/graphql/deprecations', {
    params: { query: { since: '2026-01-01T00:00:00Z' } },
  });
  expectStatus(deprecations.response, 200, 'GET /graphql/deprecations');
  need(deprecations.data, 'deprecation usage');
  const trusted = await api.GET('/api/v1/graphql/trusted-documents');
  expectStatus(trusted.response, 200, 'GET /graphql/trusted-documents');
  const manifest = need(trusted.data, 'trusted documents').data;
  const trustedReplaced = await api.PUT('/api/v1/graphql/trusted-documents', {
    body: {
      format: manifest.format,
      version: manifest.version,
      operations: [
        ...manifest.operations,
        { id: 'typed-me', name: 'TypedMe', type: 'query', body: 'query TypedMe { me { id } }' },
      ],
    },
  });
  expectStatus(trustedReplaced.response, 200, 'PUT /graphql/trusted-documents');
  need(trustedReplaced.data, 'the replaced manifest');

  // webhooks: register an endpoint, read, change, ping, read its log, redeliver, rotate, delete
  const hookCreated = await api.POST('/api/v1/webhooks', {
    body: {
      url: options.webhookUrl,
      events: ['order.created'],
      description: 'typed dashboard',
    },
  });
  expectStatus(hookCreated.response, 201, 'POST /webhooks');
  const hook = need(hookCreated.data, 'created endpoint').data;
  need(hook.secret, 'the endpoint secret');
  const hooks = await api.GET('/api/v1/webhooks', { params: { query: { limit: 10 } } });
  expectStatus(hooks.response, 200, 'GET /webhooks');
  const hookGot = await api.GET('/api/v1/webhooks/{id}', { params: { path: { id: hook.id } } });
  expectStatus(hookGot.response, 200, 'GET /webhooks/{id}');
  const hookPatched = await api.PATCH('/api/v1/webhooks/{id}', {
    params: { path: { id: hook.id } },
    body: { events: ['order.created', 'order.status_changed'] },
  });
  expectStatus(hookPatched.response, 200, 'PATCH /webhooks/{id}');
  const pinged = await api.POST('/api/v1/webhooks/{id}/ping', {
    params: { path: { id: hook.id } },
  });
  expectStatus(pinged.response, 202, 'POST /webhooks/{id}/ping');
  const deliveries = await api.GET('/api/v1/webhooks/{id}/deliveries', {
    params: { path: { id: hook.id }, query: { limit: 10 } },
  });
  expectStatus(deliveries.response, 200, 'GET /webhooks/{id}/deliveries');
  const delivery = need(need(deliveries.data, 'deliveries').data[0], 'the ping delivery');
  const redelivered = await api.POST('/api/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', {
    params: { path: { id: hook.id, delivery_id: delivery.id } },
  });
  expectStatus(redelivered.response, 202, 'POST /webhooks/{id}/deliveries/{delivery_id}/redeliver');
  const hookRotated = await api.POST('/api/v1/webhooks/{id}/secret', {
    params: { path: { id: hook.id } },
  });
  expectStatus(hookRotated.response, 200, 'POST /webhooks/{id}/secret');
  const hookDeleted = await api.DELETE('/api/v1/webhooks/{id}', {
    params: { path: { id: hook.id } },
  });
  expectStatus(hookDeleted.response, 204, 'DELETE /webhooks/{id}');

  // last: delete the user (conditional on the version we have)
  const deleted = await api.DELETE('/api/v1/users/{id}', {
    params: {
      path: { id: tess.id },
      header: { 'if-match': need(patched.response.headers.get('etag'), 'ETag of the patch') },
    },
  });
  expectStatus(deleted.response, 204, 'DELETE /users/{id}');

  return { calls, user, order, message, post, batch, grants };
}
