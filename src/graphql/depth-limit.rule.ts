import {
  GraphQLError,
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';

/** docs/contract.md section 9. */
const MAX_DEPTH = 12;
/** Introspection subtrees get their own bound: the standard introspection query nests ofType deeply. */
const MAX_INTROSPECTION_DEPTH = 15;

function depthOf(
  set: SelectionSetNode,
  fragments: Record<string, FragmentDefinitionNode>,
  depth: number,
  visiting: Set<string>,
  introspection: boolean,
  report: (depth: number, introspection: boolean) => boolean,
): void {
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) {
      const isIntro = introspection || sel.name.value === '__schema' || sel.name.value === '__type';
      if (report(depth + 1, isIntro)) {
        return;
      }
      if (sel.selectionSet) {
        depthOf(sel.selectionSet, fragments, depth + 1, visiting, isIntro, report);
      }
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      depthOf(sel.selectionSet, fragments, depth, visiting, introspection, report);
    } else {
      const name = sel.name.value;
      const fragment = fragments[name];
      if (fragment && !visiting.has(name)) {
        // cycles are reported by the standard NoFragmentCycles rule
        visiting.add(name);
        depthOf(fragment.selectionSet, fragments, depth, visiting, introspection, report);
        visiting.delete(name);
      }
    }
  }
}

/** Rejects operations nested deeper than MAX_DEPTH fields (`{ a { b } }` has depth 2). */
export function depthLimitRule(
  max = MAX_DEPTH,
  maxIntrospection = MAX_INTROSPECTION_DEPTH,
): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const fragments: Record<string, FragmentDefinitionNode> = {};
    for (const def of context.getDocument().definitions) {
      if (def.kind === Kind.FRAGMENT_DEFINITION) {
        fragments[def.name.value] = def;
      }
    }
    return {
      OperationDefinition(node) {
        let reported = false;
        depthOf(node.selectionSet, fragments, 0, new Set(), false, (depth, introspection) => {
          const limit = introspection ? maxIntrospection : max;
          if (!reported && depth > limit) {
            reported = true;
            context.reportError(
              new GraphQLError(`Query depth exceeds the maximum of ${limit}`, {
                nodes: [node],
                extensions: { code: 'QUERY_TOO_COMPLEX', depth: { limit } },
              }),
            );
          }
          return reported;
        });
        return false;
      },
    };
  };
}
