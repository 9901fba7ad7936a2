import {
  getNamedType,
  isAbstractType,
  Kind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLSchema,
  type ValueNode,
} from 'graphql';
import { kindOf, type IdKind } from '../../common/ids.js';
import type { MaybeCaller } from '../caller.js';
import type { ApiScope } from './oauth.scopes.js';

/**
 * What an OAuth access token may reach (docs/oauth.md, "Scopes"). First-party tokens, Basic and
 * API keys are not limited by scopes; an OAuth token may do what its user's role allows AND its
 * scopes cover. Anything this policy does not know is refused to OAuth tokens, so a new route or
 * field cannot be reached by a partner app until it is given a scope here.
 */

/** A requirement: the scopes needed, or `unavailable` (no scope grants it to a partner app). */
export interface ScopeRequirement {
  scopes: ApiScope[];
  unavailable?: string;
}

const NONE: ScopeRequirement = { scopes: [] };

/** REST resources by the first path segment under /api/v1. */
const REST_RESOURCES: Record<string, 'users' | 'orders' | 'posts' | 'messages'> = {
  users: 'users',
  orders: 'orders',
  posts: 'posts',
  rooms: 'messages',
};

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The scope a REST route needs from an OAuth token; `route` is the route pattern (`/api/v1/users/:id`). */
export function restRequirement(method: string, route: string): ScopeRequirement {
  const parts = route.replace(/^\/api\/v1\/?/, '').split('/');
  const [first = '', , third] = parts;
  if (first === 'auth' && parts[1] === 'me' && READ_METHODS.has(method)) {
    return NONE; // who am I: any token may ask
  }
  // users/:id/orders belongs to orders
  const resource = first === 'users' && third === 'orders' ? 'orders' : REST_RESOURCES[first];
  if (!resource) {
    return { scopes: [], unavailable: `${method} ${route}` };
  }
  return { scopes: [`${resource}:${READ_METHODS.has(method) ? 'read' : 'write'}`] };
}

/** The read scope of each GraphQL type a field can return; types not listed here are refused. */
const TYPE_SCOPES: Record<string, ApiScope[]> = {
  User: ['users:read'],
  UserConnection: ['users:read'],
  UserEdge: ['users:read'],
  Admin: ['users:read'],
  Order: ['orders:read'],
  OrderConnection: ['orders:read'],
  OrderEdge: ['orders:read'],
  Post: ['posts:read'],
  PostConnection: ['posts:read'],
  PostEdge: ['posts:read'],
  Room: ['messages:read'],
  RoomConnection: ['messages:read'],
  RoomEdge: ['messages:read'],
  Message: ['messages:read'],
  MessageConnection: ['messages:read'],
  MessageEdge: ['messages:read'],
  SearchResult: ['users:read', 'posts:read'],
  OrderItem: [],
  PageInfo: [],
};

/** Mutations by name: the write scope they need (their result also needs its read scope). */
const MUTATION_SCOPES: Record<string, ApiScope> = {
  createUser: 'users:write',
  updateUser: 'users:write',
  deleteUser: 'users:write',
  bulkCreate: 'users:write',
  createOrder: 'orders:write',
  updateOrderStatus: 'orders:write',
  createPost: 'posts:write',
  updatePost: 'posts:write',
  deletePost: 'posts:write',
  createRoom: 'messages:write',
  sendMessage: 'messages:write',
};

const ID_KIND_SCOPES: Partial<Record<IdKind, ApiScope>> = {
  user: 'users:read',
  order: 'orders:read',
  post: 'posts:read',
  room: 'messages:read',
  message: 'messages:read',
};

function idArgument(
  args: readonly { name: { value: string }; value: ValueNode }[] | undefined,
  variables: Record<string, unknown>,
): string | undefined {
  const arg = args?.find((a) => a.name.value === 'id');
  if (!arg) {
    return undefined;
  }
  if (arg.value.kind === Kind.STRING) {
    return arg.value.value;
  }
  if (arg.value.kind === Kind.VARIABLE) {
    const v = variables[arg.value.name.value];
    return typeof v === 'string' ? v : undefined;
  }
  return undefined;
}

/**
 * The scopes a GraphQL operation needs from an OAuth token: each selected field needs the read
 * scope of the type it returns, each mutation its write scope; `node(id:)` needs the read scope of
 * the id's kind. Fields whose type this policy does not know make the operation unavailable.
 */
export function graphqlRequirement(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName?: string | null,
  variables: Record<string, unknown> = {},
): ScopeRequirement {
  const scopes = new Set<ApiScope>();
  let unavailable: string | undefined;
  const typeInfo = new TypeInfo(schema);
  const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  const chosen =
    operations.length === 1
      ? operations[0]
      : operations.find((o) => o.name?.value === operationName);
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      OperationDefinition(node) {
        return node === chosen ? undefined : false;
      },
      Field(node) {
        const name = node.name.value;
        if (name.startsWith('__')) {
          return false; // introspection needs no scope
        }
        const parent = typeInfo.getParentType();
        const type = typeInfo.getType();
        if (!parent || !type) {
          return undefined;
        }
        const rootMutation = schema.getMutationType();
        if (rootMutation && parent.name === rootMutation.name) {
          const write = MUTATION_SCOPES[name];
          if (!write) {
            unavailable ??= `Mutation.${name}`;
            return undefined;
          }
          scopes.add(write);
        }
        const named = getNamedType(type);
        if (name === 'node' && parent.name === schema.getQueryType()?.name) {
          const id = idArgument(node.arguments, variables);
          const kind = id ? kindOf(id) : undefined;
          const read = kind ? ID_KIND_SCOPES[kind] : undefined;
          scopes.add(read ?? 'users:read');
          return undefined;
        }
        if ('getFields' in named || isAbstractType(named)) {
          const needed = TYPE_SCOPES[named.name];
          if (!needed) {
            unavailable ??= `${parent.name}.${name}`;
            return undefined;
          }
          needed.forEach((s) => scopes.add(s));
        }
        return undefined;
      },
    }),
  );
  return { scopes: [...scopes], unavailable };
}

/** A write scope implies the read scope of the same resource. */
function covers(granted: readonly string[], scope: string): boolean {
  if (granted.includes(scope)) {
    return true;
  }
  return scope.endsWith(':read') && granted.includes(scope.replace(/:read$/, ':write'));
}

/** The outcome of checking a caller against a requirement. */
export type ScopeCheck =
  | { allowed: true }
  | { allowed: false; missing: string[]; unavailable?: string };

/**
 * Callers that are not OAuth tokens are always allowed (their role decides). An OAuth token needs
 * every required scope; an `unavailable` requirement is refused whatever the scopes.
 */
export function checkScopes(caller: MaybeCaller, requirement: ScopeRequirement): ScopeCheck {
  if (!caller || caller.method !== 'oauth') {
    return { allowed: true };
  }
  if (requirement.unavailable) {
    return { allowed: false, missing: [], unavailable: requirement.unavailable };
  }
  const granted = caller.scopes ?? [];
  const missing = requirement.scopes.filter((s) => !covers(granted, s));
  return missing.length === 0 ? { allowed: true } : { allowed: false, missing };
}

/** `WWW-Authenticate` for a 403 insufficient_scope (RFC 6750 section 3.1). */
export function insufficientScopeChallenge(scopes: string[]): string {
  return `Bearer error="insufficient_scope", scope="${scopes.join(' ')}"`;
}
