import {
  getNamedType,
  isAbstractType,
  isCompositeType,
  isObjectType,
  Kind,
  type ConstDirectiveNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/** A `@cacheControl` hint as written on a type or a field. */
interface CacheHint {
  maxAge?: number;
  scope?: 'PUBLIC' | 'PRIVATE';
  inheritMaxAge?: boolean;
}

/** The policy of a whole operation: the most restrictive hint of the fields it selects. */
export interface CachePolicy {
  maxAge: number;
  scope: 'PUBLIC' | 'PRIVATE';
}

/** What `@cacheControl` says on a type's or field's definition (Apollo's reading of it). */
function hintOf(directives: readonly ConstDirectiveNode[] | undefined): CacheHint | undefined {
  const directive = directives?.find((d) => d.name.value === 'cacheControl');
  if (!directive?.arguments) {
    return undefined;
  }
  const arg = (name: string) => directive.arguments?.find((a) => a.name.value === name)?.value;
  const scopeValue = arg('scope');
  const scopeName = scopeValue?.kind === Kind.ENUM ? scopeValue.value : undefined;
  const scope = scopeName === 'PUBLIC' || scopeName === 'PRIVATE' ? scopeName : undefined;
  const inherit = arg('inheritMaxAge');
  if (inherit?.kind === Kind.BOOLEAN && inherit.value) {
    return { inheritMaxAge: true, scope };
  }
  const maxAge = arg('maxAge');
  return { maxAge: maxAge?.kind === Kind.INT ? Number(maxAge.value) : undefined, scope };
}

const typeHints = new WeakMap<GraphQLNamedType, CacheHint>();
function typeHint(type: GraphQLNamedType): CacheHint {
  let hint = typeHints.get(type);
  if (!hint) {
    hint = hintOf(type.astNode?.directives) ?? {};
    for (const ext of type.extensionASTNodes ?? []) {
      hint = hintOf(ext.directives) ?? hint;
    }
    typeHints.set(type, hint);
  }
  return hint;
}

const fieldHints = new WeakMap<GraphQLField<unknown, unknown>, CacheHint>();
function fieldHint(field: GraphQLField<unknown, unknown>): CacheHint {
  let hint = fieldHints.get(field);
  if (!hint) {
    hint = hintOf(field.astNode?.directives) ?? {};
    fieldHints.set(field, hint);
  }
  return hint;
}

/**
 * The policy one resolved field contributes, exactly as Apollo's cache-control plugin derives it
 * (`@apollo/server/plugin/cacheControl`): the return type's hint, replaced by the field's own; a
 * field with no maxAge gets `defaultMaxAge` when it returns a composite type (unless it inherits)
 * or is a root field; scalar fields otherwise inherit their parent's.
 */
function fieldPolicy(
  field: GraphQLField<unknown, unknown>,
  root: boolean,
  defaultMaxAge: number,
): CacheHint {
  const policy: CacheHint = {};
  let inheritMaxAge = false;
  const target = getNamedType(field.type);
  const composite = isCompositeType(target);
  if (composite) {
    const typeAnnotation = typeHint(target);
    policy.maxAge = typeAnnotation.maxAge;
    policy.scope = typeAnnotation.scope;
    inheritMaxAge = !!typeAnnotation.inheritMaxAge;
  }
  const own = fieldHint(field);
  if (own.inheritMaxAge && policy.maxAge === undefined) {
    inheritMaxAge = true;
    policy.scope = own.scope ?? policy.scope;
  } else {
    policy.maxAge = own.maxAge ?? policy.maxAge;
    policy.scope = own.scope ?? policy.scope;
  }
  if (policy.maxAge === undefined && ((composite && !inheritMaxAge) || root)) {
    policy.maxAge = defaultMaxAge;
  }
  return policy;
}

class PolicyWalker {
  maxAge: number | undefined;
  scope: 'PUBLIC' | 'PRIVATE' = 'PUBLIC';
  private readonly seen = new Set<string>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>,
    private readonly defaultMaxAge: number,
  ) {}

  private restrict(hint: CacheHint): void {
    if (hint.maxAge !== undefined && (this.maxAge === undefined || hint.maxAge < this.maxAge)) {
      this.maxAge = hint.maxAge;
    }
    if (hint.scope === 'PRIVATE') {
      this.scope = 'PRIVATE';
    }
  }

  /**
   * Every field the selection can resolve. On an abstract type a field resolves on whichever object
   * type the value has, so each possible type's field counts: never less restrictive than at run time.
   */
  walk(set: SelectionSetNode, parent: GraphQLCompositeType, root: boolean): void {
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        const name = sel.name.value;
        if (name.startsWith('__')) {
          continue; // __typename and introspection: Apollo's hooks never see them either
        }
        const owners = isAbstractType(parent) ? this.schema.getPossibleTypes(parent) : [parent];
        for (const owner of owners) {
          const field = (
            owner as { getFields?: () => Record<string, GraphQLField<unknown, unknown>> }
          ).getFields?.()[name];
          if (!field) {
            continue;
          }
          this.restrict(fieldPolicy(field, root, this.defaultMaxAge));
          const target = getNamedType(field.type);
          if (sel.selectionSet && isCompositeType(target)) {
            this.walk(sel.selectionSet, target, false);
          }
        }
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        const type = sel.typeCondition ? this.schema.getType(sel.typeCondition.name.value) : parent;
        if (type && isCompositeType(type)) {
          this.walk(sel.selectionSet, type, root);
        }
      } else {
        const fragment = this.fragments.get(sel.name.value);
        const key = `${sel.name.value}\u0000${root ? 1 : 0}`;
        if (!fragment || this.seen.has(key)) {
          continue; // a fragment adds the same hints wherever it is spread
        }
        this.seen.add(key);
        const type = this.schema.getType(fragment.typeCondition.name.value);
        if (type && isCompositeType(type)) {
          this.walk(fragment.selectionSet, type, root);
        }
      }
    }
  }
}

const policies = new WeakMap<OperationDefinitionNode, CachePolicy | null>();

/**
 * The cache policy of an operation, worked out from its document and the schema's `@cacheControl`
 * hints once per parsed document (Apollo hands the same DocumentNode for the same query text), not
 * field by field while it executes. It equals what Apollo's cache-control plugin computes at run
 * time, except that it also counts fields that end up not resolved (under a null parent, skipped by
 * a variable) and every possible type of an abstract field: it can only be more restrictive.
 * `null` when the operation is not cacheable (maxAge 0).
 */
export function operationCachePolicy(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  defaultMaxAge = 0,
): CachePolicy | null {
  if (policies.has(operation)) {
    return policies.get(operation) ?? null;
  }
  const root = schema.getRootType(operation.operation);
  let policy: CachePolicy | null = null;
  if (root && isObjectType(root)) {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of document.definitions) {
      if (def.kind === Kind.FRAGMENT_DEFINITION) {
        fragments.set(def.name.value, def);
      }
    }
    const walker = new PolicyWalker(schema, fragments, defaultMaxAge);
    walker.walk(operation.selectionSet, root, true);
    if (walker.maxAge !== undefined && walker.maxAge > 0) {
      policy = { maxAge: walker.maxAge, scope: walker.scope };
    }
  }
  policies.set(operation, policy);
  return policy;
}
