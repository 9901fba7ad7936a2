import {
  GraphQLError,
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

const INTROSPECTION_ROOTS = new Set(['__schema', '__type', '__typename']);

function rootFieldNames(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  out: Set<string>,
  seen: Set<string>,
): void {
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) {
      out.add(sel.name.value);
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      rootFieldNames(sel.selectionSet, fragments, out, seen);
    } else if (!seen.has(sel.name.value)) {
      seen.add(sel.name.value);
      const fragment = fragments.get(sel.name.value);
      if (fragment) {
        rootFieldNames(fragment.selectionSet, fragments, out, seen);
      }
    }
  }
}

/** True when the operation selects only `__schema`, `__type` and `__typename` at its root. */
export function isIntrospectionOnly(
  document: DocumentNode,
  operation: OperationDefinitionNode,
): boolean {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(def.name.value, def);
    }
  }
  const names = new Set<string>();
  rootFieldNames(operation.selectionSet, fragments, names, new Set());
  return [...names].every((n) => INTROSPECTION_ROOTS.has(n));
}

/** Anonymous callers may introspect; every other root field needs credentials (docs/contract.md section 7). */
export function authenticationRequired(status?: number): GraphQLError {
  return new GraphQLError('Authentication required: send Basic, Bearer or API key credentials', {
    extensions: { code: 'UNAUTHENTICATED', ...(status ? { http: { status } } : {}) },
  });
}
