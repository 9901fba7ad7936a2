import { getDirective, MapperKind, mapSchema } from '@graphql-tools/utils';
import {
  defaultFieldResolver,
  getNamedType,
  GraphQLError,
  isCompositeType,
  isInterfaceType,
  isObjectType,
  Kind,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import { hasRole, type Caller } from '../../identity/caller.js';
import {
  isApiScope,
  lacksScopes,
  missingScopes,
  NOT_FOR_APPS,
  type ApiScope,
} from '../../identity/scopes.js';
import { isRole, type Role } from '../../identity/role.js';
import { Forbidden, Unauthorized } from '../../common/errors.js';
import type { GqlContext } from '../context.js';
import { typeNameOf } from '../node.js';
import { AUTH_DIRECTIVE } from './directives.js';

/** What one `@auth` says: the role (root fields) and the scopes an OAuth token needs. */
interface AuthDeclaration {
  requires?: Role;
  scopes?: readonly ApiScope[];
}

/** The `@auth` of a field or an object type, its scopes checked against the known ones. */
function authDeclaration(
  schema: GraphQLSchema,
  node: Parameters<typeof getDirective>[1],
  where: string,
): AuthDeclaration | undefined {
  const directive = getDirective(schema, node, AUTH_DIRECTIVE)?.[0];
  if (!directive) {
    return undefined;
  }
  const requires: unknown = directive.requires;
  const scopes: unknown = directive.scopes;
  if (scopes !== undefined && scopes !== null) {
    const unknown = (scopes as string[]).filter((s) => !isApiScope(s));
    if (unknown.length > 0) {
      // a typo would refuse every partner app: fail at boot instead
      throw new Error(`@auth on ${where} names unknown scope(s): ${unknown.join(', ')}`);
    }
  }
  return {
    requires: isRole(requires) ? requires : undefined,
    scopes: Array.isArray(scopes) ? (scopes as ApiScope[]) : undefined,
  };
}

function requireRole(ctx: GqlContext, role: Role): void {
  if (!ctx.caller) {
    throw Unauthorized();
  }
  if (!hasRole(ctx.caller, role)) {
    throw Forbidden(`This field requires the ${role} role`);
  }
}

/** The scopes an OAuth token needs for one root field's selection (or the type it may not read). */
interface SelectionScopes {
  scopes: Set<ApiScope>;
  unavailable?: string;
}

/**
 * Reads the object types a root field's selection touches (through fragments too): each needs its
 * own `@auth(scopes:)`; a type without one may not be read by partner apps at all.
 */
function collect(
  info: Pick<GraphQLResolveInfo, 'schema' | 'fragments'>,
  typeScopes: ReadonlyMap<string, readonly ApiScope[]>,
  parent: GraphQLCompositeType,
  set: SelectionSetNode | undefined,
  into: SelectionScopes,
  fragmentsSeen: Set<string>,
): void {
  for (const selection of set?.selections ?? []) {
    if (selection.kind === Kind.FIELD) {
      if (selection.name.value.startsWith('__')) {
        continue; // introspection and __typename need no scope
      }
      if (isObjectType(parent)) {
        const scopes = typeScopes.get(parent.name);
        if (!scopes) {
          into.unavailable ??= parent.name;
          return;
        }
        scopes.forEach((s) => into.scopes.add(s));
      }
      const field =
        isObjectType(parent) || isInterfaceType(parent)
          ? parent.getFields()[selection.name.value]
          : undefined;
      const named = field ? getNamedType(field.type) : undefined;
      if (named && isCompositeType(named)) {
        collect(info, typeScopes, named, selection.selectionSet, into, fragmentsSeen);
      }
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const type = selection.typeCondition
        ? info.schema.getType(selection.typeCondition.name.value)
        : parent;
      if (type && isCompositeType(type)) {
        collect(info, typeScopes, type, selection.selectionSet, into, fragmentsSeen);
      }
    } else if (!fragmentsSeen.has(selection.name.value)) {
      fragmentsSeen.add(selection.name.value);
      const fragment = info.fragments[selection.name.value];
      const type = fragment && info.schema.getType(fragment.typeCondition.name.value);
      if (type && isCompositeType(type)) {
        collect(info, typeScopes, type, fragment.selectionSet, into, fragmentsSeen);
      }
    }
  }
}

/**
 * OAuth access tokens on one root field: the field's own `@auth` scopes, the read scopes of every
 * object type its selection reads, and for `node(id:)` those of the id's type. FORBIDDEN with
 * `extensions.requiredScopes` when the token's scopes do not cover them; other callers pass.
 */
class ScopeCheck {
  /** Per parsed field node (documents are parsed once and cached): what its selection needs. */
  private readonly selections = new WeakMap<FieldNode, SelectionScopes>();

  constructor(private readonly typeScopes: ReadonlyMap<string, readonly ApiScope[]>) {}

  enforce(
    caller: Caller,
    declared: readonly ApiScope[],
    args: Record<string, unknown>,
    info: GraphQLResolveInfo,
  ): void {
    const selection = this.selectionOf(info);
    const required = new Set<ApiScope>([...declared, ...selection.scopes]);
    if (info.fieldName === 'node' && typeof args.id === 'string') {
      const type = typeNameOf({ id: args.id });
      (type ? (this.typeScopes.get(type) ?? []) : []).forEach((s) => required.add(s));
    }
    const requiredScopes = [...required];
    if (selection.unavailable) {
      throw new GraphQLError(NOT_FOR_APPS, { extensions: { code: 'FORBIDDEN', requiredScopes } });
    }
    const missing = missingScopes(caller.scopes ?? [], requiredScopes);
    if (missing.length > 0) {
      throw new GraphQLError(lacksScopes(missing), {
        extensions: { code: 'FORBIDDEN', requiredScopes },
      });
    }
  }

  private selectionOf(info: GraphQLResolveInfo): SelectionScopes {
    const first = info.fieldNodes[0];
    let found = this.selections.get(first);
    if (!found) {
      found = { scopes: new Set() };
      const type = getNamedType(info.returnType);
      const seen = new Set<string>();
      if (isCompositeType(type)) {
        for (const node of info.fieldNodes) {
          collect(info, this.typeScopes, type, node.selectionSet, found, seen);
        }
      }
      this.selections.set(first, found);
    }
    return found;
  }
}

/** The read scopes of each object type (its `@auth(scopes:)`), per schema. */
const typeScopesOf = new WeakMap<GraphQLSchema, Map<string, readonly ApiScope[]>>();

function typeScopesFor(schema: GraphQLSchema): Map<string, readonly ApiScope[]> {
  let found = typeScopesOf.get(schema);
  if (!found) {
    found = new Map();
    for (const type of Object.values(schema.getTypeMap())) {
      const scopes = isObjectType(type)
        ? authDeclaration(schema, type, type.name)?.scopes
        : undefined;
      if (scopes) {
        found.set(type.name, scopes);
      }
    }
    typeScopesOf.set(schema, found);
  }
  return found;
}

/** The root fields an operation selects (through fragments), with their nodes. */
function rootFields(
  set: SelectionSetNode,
  fragments: Record<string, FragmentDefinitionNode>,
  out: FieldNode[],
  seen: Set<string>,
): void {
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      out.push(selection);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      rootFields(selection.selectionSet, fragments, out, seen);
    } else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value);
      const fragment = fragments[selection.name.value];
      if (fragment) {
        rootFields(fragment.selectionSet, fragments, out, seen);
      }
    }
  }
}

/**
 * Before execution, for an OAuth access token: the scopes the whole operation needs (each root
 * field's `@auth(scopes:)`, the read scopes of every object type selected, and for `node(id:)` the
 * id's type). When the token's scopes do not cover them, or a selected root field or type is not
 * available to partner apps, the operation is refused as a whole: one FORBIDDEN error with
 * `extensions.requiredScopes` and no `data` (nothing runs, so no partial answer hides the refusal).
 * Other callers: undefined. The role of each field is still checked as it resolves.
 */
export function operationScopeRefusal(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | null | undefined,
  caller: Caller | undefined,
): GraphQLError | undefined {
  if (caller?.method !== 'oauth') {
    return undefined;
  }
  const root = schema.getRootType(operation.operation);
  if (!root) {
    return undefined;
  }
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) {
      fragments[def.name.value] = def;
    }
  }
  const fields: FieldNode[] = [];
  rootFields(operation.selectionSet, fragments, fields, new Set());
  const typeScopes = typeScopesFor(schema);
  const required = new Set<ApiScope>();
  let unavailable = false;
  const seen = new Set<string>();
  for (const node of fields) {
    const name = node.name.value;
    if (name.startsWith('__')) {
      continue;
    }
    const field = root.getFields()[name];
    if (!field) {
      continue; // validation has refused it already
    }
    const declared = authDeclaration(schema, field, `${root.name}.${name}`);
    if (!declared?.scopes) {
      unavailable = true;
      continue;
    }
    declared.scopes.forEach((sc) => required.add(sc));
    const into: SelectionScopes = { scopes: new Set() };
    const type = getNamedType(field.type);
    if (isCompositeType(type)) {
      collect({ schema, fragments }, typeScopes, type, node.selectionSet, into, seen);
    }
    if (into.unavailable) {
      unavailable = true;
    }
    into.scopes.forEach((sc) => required.add(sc));
    if (name === 'node') {
      const arg = node.arguments?.find((a) => a.name.value === 'id')?.value;
      const id =
        arg?.kind === Kind.STRING
          ? arg.value
          : arg?.kind === Kind.VARIABLE
            ? variables?.[arg.name.value]
            : undefined;
      const idType = typeof id === 'string' ? typeNameOf({ id }) : undefined;
      (idType ? (typeScopes.get(idType) ?? []) : []).forEach((sc) => required.add(sc));
    }
  }
  const requiredScopes = [...required];
  if (unavailable) {
    return new GraphQLError(NOT_FOR_APPS, { extensions: { code: 'FORBIDDEN', requiredScopes } });
  }
  const missing = missingScopes(caller.scopes ?? [], requiredScopes);
  if (missing.length === 0) {
    return undefined;
  }
  return new GraphQLError(lacksScopes(missing), {
    extensions: { code: 'FORBIDDEN', requiredScopes },
  });
}

/**
 * Enforces `@auth(requires: ROLE, scopes: [...])` on every field that carries it (every root field),
 * whatever the transport (HTTP or WebSocket run the same schema): the role for every caller, the
 * scopes for OAuth access tokens (with the `@auth(scopes:)` of each object type read). A refusal
 * throws FORBIDDEN (UNAUTHENTICATED for anonymous callers) from the field, so the field becomes null
 * and the rest of the data is still returned; a subscription is checked when it starts and for each
 * event. The check is a plain function call per resolved field: no Nest guard pipeline.
 */
export function authDirectiveTransformer(schema: GraphQLSchema): GraphQLSchema {
  const typeScopes = new Map<string, readonly ApiScope[]>();
  for (const type of Object.values(schema.getTypeMap())) {
    const scopes = isObjectType(type)
      ? authDeclaration(schema, type, type.name)?.scopes
      : undefined;
    if (scopes) {
      typeScopes.set(type.name, scopes);
    }
  }
  const scopeCheck = new ScopeCheck(typeScopes);
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
      const declaration = authDeclaration(schema, field, `${typeName}.${fieldName}`);
      if (!declaration) {
        return field;
      }
      const { requires, scopes } = declaration;
      const check = (ctx: GqlContext, args: Record<string, unknown>, info: GraphQLResolveInfo) => {
        if (requires) {
          requireRole(ctx, requires);
        }
        if (ctx.caller?.method === 'oauth') {
          if (!scopes) {
            throw new GraphQLError(NOT_FOR_APPS, { extensions: { code: 'FORBIDDEN' } });
          }
          scopeCheck.enforce(ctx.caller, scopes, args, info);
        }
      };
      const resolve: GraphQLFieldResolver<unknown, GqlContext> =
        field.resolve ?? defaultFieldResolver;
      field.resolve = (source, args: Record<string, unknown>, ctx: GqlContext, info) => {
        check(ctx, args, info);
        return resolve(source, args, ctx, info);
      };
      if (field.subscribe) {
        const subscribe = field.subscribe;
        field.subscribe = (source, args: Record<string, unknown>, ctx: GqlContext, info) => {
          check(ctx, args, info);
          return subscribe(source, args, ctx, info);
        };
      }
      return field;
    },
  });
}
