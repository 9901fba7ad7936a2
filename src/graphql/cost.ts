import {
  getNamedType,
  getNullableType,
  GraphQLError,
  isCompositeType,
  isListType,
  Kind,
  type DocumentNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLSchema,
} from 'graphql';
import { getComplexity, type ComplexityEstimator } from 'graphql-query-complexity';
import { DEFAULT_LIMIT } from '../common/list-query.js';

/** DESIGN.md section 9. */
export const MAX_QUERY_COST = 1000;

interface FieldCostInfo {
  /** The field's own cost: `@cost(complexity)` or 1 for object fields, 0 for scalars. */
  own: number;
  /** Multiplies the children's cost by first/last (default 20): lists and paginated fields. */
  multiplies: boolean;
  introspection: boolean;
}

/** Schema-derived facts per field, computed once (the schema never changes at runtime). */
const infoCache = new WeakMap<GraphQLField<unknown, unknown>, FieldCostInfo>();

function costDirectiveOf(field: GraphQLField<unknown, unknown>): number | undefined {
  const directive = field.astNode?.directives?.find((d) => d.name.value === 'cost');
  const arg = directive?.arguments?.find((a) => a.name.value === 'complexity');
  return arg?.value.kind === Kind.INT ? Number(arg.value.value) : undefined;
}

function fieldInfo(
  parent: GraphQLCompositeType,
  field: GraphQLField<unknown, unknown>,
): FieldCostInfo {
  let info = infoCache.get(field);
  if (!info) {
    const introspection = field.name.startsWith('__') || parent.name.startsWith('__');
    const paginated = field.args.some((a) => a.name === 'first' || a.name === 'last');
    // edges/nodes of a connection are already paid for by the connection field's first/last
    const insideConnection = parent.name.endsWith('Connection');
    info = {
      own: costDirectiveOf(field) ?? (isCompositeType(getNamedType(field.type)) ? 1 : 0),
      multiplies: !insideConnection && (paginated || isListType(getNullableType(field.type))),
      introspection,
    };
    infoCache.set(field, info);
  }
  return info;
}

function pageSize(args: Record<string, unknown>): number {
  const n =
    typeof args.first === 'number'
      ? args.first
      : typeof args.last === 'number'
        ? args.last
        : DEFAULT_LIMIT;
  return Math.max(0, n);
}

/**
 * 1 per object field, list and paginated fields times first/last (default 20), `@cost` replaces a
 * field's own cost. Introspection is free here (it is bounded by the depth rule and its switch).
 */
export const costEstimator: ComplexityEstimator = ({ type, field, args, childComplexity }) => {
  const info = fieldInfo(type, field as GraphQLField<unknown, unknown>);
  if (info.introspection) {
    return 0;
  }
  return info.own + (info.multiplies ? pageSize(args) : 1) * childComplexity;
};

const ESTIMATORS = [costEstimator];

/**
 * Costs already computed, per parsed document (Apollo hands the same DocumentNode object for the same
 * query text) and per operation name + variables: a hot query is walked once, not on every request.
 */
const costCache = new WeakMap<DocumentNode, Map<string, number>>();
const MAX_VARIANTS_PER_DOCUMENT = 32;

/** The cost of the operation to run (variables applied). Throws a GraphQLError on bad input. */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
  operationName: string | undefined | null,
): number {
  let variants = costCache.get(document);
  const key = `${operationName ?? ''}\u0000${variables ? JSON.stringify(variables) : ''}`;
  const cached = variants?.get(key);
  if (cached !== undefined) {
    return cached;
  }
  const cost = getComplexity({
    schema,
    query: document,
    variables: variables ?? {},
    operationName: operationName ?? undefined,
    estimators: ESTIMATORS,
  });
  if (key.length > 2048) {
    return cost; // large inputs (bulk mutations) are not worth keeping
  }
  if (!variants) {
    variants = new Map();
    costCache.set(document, variants);
  }
  if (variants.size >= MAX_VARIANTS_PER_DOCUMENT) {
    variants.clear();
  }
  variants.set(key, cost);
  return cost;
}

export function tooComplex(cost: number): GraphQLError {
  return new GraphQLError(
    `Query cost ${cost} exceeds the maximum of ${MAX_QUERY_COST}: request fewer items (first/last) or fewer fields`,
    { extensions: { code: 'QUERY_TOO_COMPLEX', cost: { requested: cost, limit: MAX_QUERY_COST } } },
  );
}
