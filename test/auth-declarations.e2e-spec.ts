import { getDirective } from '@graphql-tools/utils';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { ModulesContainer } from '@nestjs/core';
import { GraphQLSchemaHost } from '@nestjs/graphql';
import { isObjectType, type GraphQLSchema } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_METADATA, FIRST_PARTY_ONLY } from '../src/identity/auth.decorators.js';
import { API_SCOPES } from '../src/identity/scopes.js';
import { isRole } from '../src/identity/role.js';
import { startApp, type TestApp } from './helpers/app.js';
import { request } from './helpers/http.js';

/** Why a declaration is not one: undefined when it is (public, or a role and valid scopes). */
function flaw(requirement: unknown): string | undefined {
  if (!requirement || typeof requirement !== 'object') {
    return 'no @Authenticated({ role, scopes }) or @Public()';
  }
  const r = requirement as { public?: boolean; role?: unknown; scopes?: unknown };
  if (r.public) {
    return undefined;
  }
  if (!isRole(r.role)) {
    return 'no role';
  }
  if (r.scopes === FIRST_PARTY_ONLY) {
    return undefined;
  }
  if (!Array.isArray(r.scopes)) {
    return 'no scopes';
  }
  const unknown = r.scopes.filter((s) => !(API_SCOPES as readonly unknown[]).includes(s));
  return unknown.length > 0 ? `unknown scopes ${unknown.join(' ')}` : undefined;
}

/**
 * GraphQL's form of FIRST_PARTY_ONLY: `@auth` without `scopes` refuses OAuth tokens (NOT_FOR_APPS),
 * which is a decision only when the description says so (webhook management is first-party).
 */
const FIRST_PARTY_GRAPHQL = /not available to partner apps/;

/** Every REST route handler with its declaration (the handler's own, else its controller's). */
function restRoutes(t: TestApp): { route: string; requirement: unknown }[] {
  const routes: { route: string; requirement: unknown }[] = [];
  for (const module of t.app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as (new () => object) | null;
      if (!controller) {
        continue;
      }
      const proto = controller.prototype as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(proto)) {
        const handler = proto[name];
        if (
          typeof handler !== 'function' ||
          Reflect.getMetadata(METHOD_METADATA, handler) === undefined
        ) {
          continue;
        }
        const base = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
        const path = String(Reflect.getMetadata(PATH_METADATA, handler) ?? '');
        routes.push({
          route: `${controller.name}.${name} (${base}/${path})`,
          requirement:
            Reflect.getMetadata(AUTH_METADATA, handler) ??
            Reflect.getMetadata(AUTH_METADATA, controller),
        });
      }
    }
  }
  return routes;
}

function authOf(schema: GraphQLSchema, node: Parameters<typeof getDirective>[1]) {
  return getDirective(schema, node, 'auth')?.[0] as
    | { requires?: unknown; scopes?: unknown }
    | undefined;
}

/**
 * Every route and every root field says who may call it and what an OAuth access token needs,
 * in one declaration (docs/oauth.md): this walks them all, so a new one cannot forget it.
 */
describe('auth declarations: every route and root field declares its role and its scopes', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t?.close());

  it('every REST route has @Authenticated({ role, scopes }) or @Public()', () => {
    const routes = restRoutes(t);
    expect(routes.length).toBeGreaterThan(30);
    const flawed = routes
      .map(({ route, requirement }) => ({ route, flaw: flaw(requirement) }))
      .filter((r) => r.flaw !== undefined);
    expect(flawed).toEqual([]);
  });

  it('every OpenAPI operation states its security: the scopes in oauth2, [] when public', async () => {
    const doc = await request(t.url, '/api/docs-json');
    expect(doc.status).toBe(200);
    const schemes = Object.keys(doc.body.components.securitySchemes).sort();
    expect(schemes).toEqual(['api_key', 'api_key_query', 'basic', 'bearer', 'oauth2']);
    const flawed: string[] = [];
    let operations = 0;
    for (const [path, item] of Object.entries<Record<string, any>>(doc.body.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        operations++;
        const where = `${method.toUpperCase()} ${path}`;
        if (!Array.isArray(op.security)) {
          flawed.push(`${where}: no security`);
          continue;
        }
        if (op.security.length === 0) {
          continue; // public
        }
        const names = op.security.map((s: object) => Object.keys(s)[0]);
        const oauth = op.security.find((s: { oauth2?: string[] }) => s.oauth2)?.oauth2;
        if (!['bearer', 'basic', 'api_key', 'api_key_query'].every((n) => names.includes(n))) {
          flawed.push(`${where}: ${names.join(',')}`);
        }
        if (oauth && !oauth.every((s: string) => (API_SCOPES as readonly string[]).includes(s))) {
          flawed.push(`${where}: oauth2 ${oauth.join(' ')}`);
        }
      }
    }
    expect(operations).toBeGreaterThan(30);
    expect(flawed).toEqual([]);
  });

  it('the routes and root fields the contract refuses to GUESTs declare USER (so OpenAPI, @auth and the service agree)', () => {
    const byHandler = new Map(restRoutes(t).map((r) => [r.route.split(' ')[0], r.requirement]));
    for (const handler of [
      'RoomsController.create',
      'RoomsController.send',
      'PostsController.create',
      'PostsController.replace',
      'PostsController.patch',
      'PostsController.remove',
      'OrdersController.list',
      'OrdersController.create',
      'OrdersController.get',
      'OrdersController.update',
      'UsersController.batch',
      'UsersController.replace',
      'UsersController.patch',
      'UsersController.remove',
    ]) {
      expect(byHandler.get(handler), handler).toMatchObject({ role: 'USER' });
    }
    const schema = t.app.get(GraphQLSchemaHost).schema;
    const mutations = schema.getMutationType()!.getFields();
    for (const name of [
      'createRoom',
      'sendMessage',
      'createPost',
      'updatePost',
      'deletePost',
      'createOrder',
      'updateOrderStatus',
      'updateUser',
      'deleteUser',
    ]) {
      expect(authOf(schema, mutations[name])?.requires, name).toBe('USER');
    }
    expect(authOf(schema, mutations.bulkCreate)?.requires, 'bulkCreate').toBe('ADMIN');
    expect(authOf(schema, schema.getQueryType()!.getFields().order)?.requires, 'order').toBe(
      'USER',
    );
  });

  it('every root field has @auth(requires:, scopes:) and every object type @auth(scopes:)', () => {
    const schema = t.app.get(GraphQLSchemaHost).schema;
    const flawed: string[] = [];
    const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()];
    let fields = 0;
    for (const root of roots) {
      for (const field of Object.values(root?.getFields() ?? {})) {
        fields++;
        const auth = authOf(schema, field);
        const firstParty =
          auth?.scopes === undefined && FIRST_PARTY_GRAPHQL.test(field.description ?? '');
        const why = flaw(
          auth && { role: auth.requires, scopes: firstParty ? FIRST_PARTY_ONLY : auth.scopes },
        );
        if (why) {
          flawed.push(`${root!.name}.${field.name}: ${why}`);
        }
      }
    }
    expect(fields).toBeGreaterThan(20);
    for (const type of Object.values(schema.getTypeMap())) {
      if (!isObjectType(type) || type.name.startsWith('__') || roots.includes(type)) {
        continue;
      }
      const auth = authOf(schema, type);
      if (!auth && FIRST_PARTY_GRAPHQL.test(type.description ?? '')) {
        continue;
      }
      const why = flaw(auth && { role: 'GUEST', scopes: auth.scopes });
      if (why || auth?.requires !== undefined) {
        flawed.push(`type ${type.name}: ${why ?? 'a role on a type means nothing'}`);
      }
    }
    expect(flawed).toEqual([]);
  });
});
