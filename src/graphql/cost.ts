import {
  getNamedType,
  getNullableType,
  getOperationAST,
  GraphQLError,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isCompositeType,
  isListType,
  Kind,
  typeFromAST,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type GraphQLType,
  type InlineFragmentNode,
  type SelectionSetNode,
  type FragmentSpreadNode,
  getArgumentValues,
  getDirectiveValues,
  getVariableValues,
  isAbstractType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
} from 'graphql';
import { DEFAULT_LIMIT } from '../common/list-query.js';

/** The contract's limit (docs/graphql.md "Limits"). */
export const MAX_QUERY_COST = 1000;

interface FieldCostInfo {
  /** The field's own cost: `@cost(weight)`, else 1 (scalars and objects alike). */
  own: number;
  /** Multiplies (part of) its selection by first/last (default 20): lists and paginated fields. */
  multiplies: boolean;
  /** A `...Connection` type: only its `edges`/`nodes` are per item, `pageInfo`/`totalCount` once. */
  connection: boolean;
  introspection: boolean;
}

/** Schema-derived facts per field, computed once (the schema never changes at runtime). */
const infoCache = new WeakMap<GraphQLField<unknown, unknown>, FieldCostInfo>();

function costDirectiveOf(field: GraphQLField<unknown, unknown>): number | undefined {
  const directive = field.astNode?.directives?.find((d) => d.name.value === 'cost');
  const arg = directive?.arguments?.find((a) => a.name.value === 'weight');
  return arg?.value.kind === Kind.INT ? Number(arg.value.value) : undefined;
}

function fieldInfo(parent: GraphQLNamedType, field: GraphQLField<unknown, unknown>): FieldCostInfo {
  let info = infoCache.get(field);
  if (!info) {
    const named = getNamedType(field.type);
    const paginated = field.args.some((a) => a.name === 'first' || a.name === 'last');
    const connection = isCompositeType(named) && named.name.endsWith('Connection');
    // edges/nodes of a connection are paid for by the connection field's first/last
    const insideConnection = parent.name.endsWith('Connection');
    info = {
      own: costDirectiveOf(field) ?? 1,
      multiplies:
        !insideConnection &&
        isCompositeType(named) &&
        (paginated || isListType(getNullableType(field.type))),
      connection,
      introspection: field.name.startsWith('__') || parent.name.startsWith('__'),
    };
    infoCache.set(field, info);
  }
  return info;
}

/**
 * Introspection fields are read from the schema in memory, with no resolver or database behind them:
 * this many of them make one point. Their lists and `ofType` count as many items as the schema
 * holds on average (introspectionSizes), so an operation pays for about the size of its answer: the
 * standard introspection query (any options of graphql-js `getIntrospectionQuery`) costs a few
 * hundred points, and as much again for each repetition of it under another alias.
 */
const INTROSPECTION_FIELDS_PER_POINT = 10;

/** Per schema: how many items an introspection field holds on average (`__Type.fields`...). */
const introspectionSizeCache = new WeakMap<GraphQLSchema, Map<string, number>>();

function wrappersOf(type: GraphQLType): number {
  return 'ofType' in type ? 1 + wrappersOf(type.ofType) : 0;
}

/**
 * The expected length of each introspection list over the schema's types (a scalar's `fields` is
 * null: the average is over every type, as `__schema { types { fields } }` reads them), and for
 * `ofType` the share of type references that wrap another (`[Post!]!` is 3 wrappers deep).
 */
function introspectionSizes(schema: GraphQLSchema): Map<string, number> {
  let sizes = introspectionSizeCache.get(schema);
  if (!sizes) {
    const types = Object.values(schema.getTypeMap());
    const withFields = types.filter((t) => isObjectType(t) || isInterfaceType(t));
    const fields = withFields.flatMap((t) => Object.values(t.getFields()));
    const inputFields = types
      .filter(isInputObjectType)
      .flatMap((t) => Object.values(t.getFields()));
    const directives = schema.getDirectives();
    const args = [...fields, ...directives].flatMap((f) => f.args);
    const refs = [...fields, ...inputFields, ...args].map((f) => wrappersOf(f.type));
    const wrappers = refs.reduce((a, b) => a + b, 0);
    const perType = (n: number) => n / Math.max(1, types.length);
    sizes = new Map([
      ['__Schema.types', types.length],
      ['__Schema.directives', directives.length],
      ['__Type.fields', perType(fields.length)],
      ['__Type.interfaces', perType(withFields.reduce((n, t) => n + t.getInterfaces().length, 0))],
      [
        '__Type.possibleTypes',
        perType(
          types.filter(isAbstractType).reduce((n, t) => n + schema.getPossibleTypes(t).length, 0),
        ),
      ],
      [
        '__Type.enumValues',
        perType(types.filter(isEnumType).reduce((n, t) => n + t.getValues().length, 0)),
      ],
      ['__Type.inputFields', perType(inputFields.length)],
      ['__Type.ofType', wrappers / Math.max(1, wrappers + refs.length)],
      [
        '__Field.args',
        fields.length ? fields.reduce((n, f) => n + f.args.length, 0) / fields.length : 0,
      ],
      [
        '__Directive.args',
        directives.length
          ? directives.reduce((n, d) => n + d.args.length, 0) / directives.length
          : 0,
      ],
    ]);
    introspectionSizeCache.set(schema, sizes);
  }
  return sizes;
}

/**
 * How many items a list or paginated field stands for: first/last, else as many as Federation's
 * `_entities(representations:)` is given (each one a `node(id)` lookup), else DEFAULT_LIMIT.
 */
function pageSize(args: Record<string, unknown>): number {
  const n =
    typeof args.first === 'number'
      ? args.first
      : typeof args.last === 'number'
        ? args.last
        : Array.isArray(args.representations)
          ? args.representations.length
          : DEFAULT_LIMIT;
  return Math.max(0, n);
}

const PER_ITEM_CONNECTION_FIELDS = new Set(['edges', 'nodes']);

/**
 * Walks the operation once. Fragments are costed once per type they are spread on (memoized), so
 * nested spreads cannot make the walk exponential. Every branch of an abstract type (union,
 * interface) is added, not maxed: an upper bound that never undercharges.
 */
class CostWalker {
  private readonly fragmentCost = new Map<string, number>();
  private readonly visiting = new Set<string>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragments: Map<string, FragmentDefinitionNode>,
    private readonly variables: Record<string, unknown>,
  ) {}

  private included(node: FieldNode | InlineFragmentNode | FragmentSpreadNode): boolean {
    if (!node.directives?.length) {
      return true;
    }
    const skip = getDirectiveValues(GraphQLSkipDirective, node, this.variables);
    if (skip?.if === true) {
      return false;
    }
    const include = getDirectiveValues(GraphQLIncludeDirective, node, this.variables);
    return include?.if !== false;
  }

  /** The cost of a selection set; `perItem` multiplies only edges/nodes (connections). */
  selectionCost(set: SelectionSetNode, type: GraphQLNamedType, perItem = 1): number {
    let total = 0;
    for (const sel of set.selections) {
      if (!this.included(sel)) {
        continue;
      }
      if (sel.kind === Kind.FIELD) {
        const cost = this.fieldCost(sel, type);
        total +=
          perItem !== 1 && PER_ITEM_CONNECTION_FIELDS.has(sel.name.value) ? perItem * cost : cost;
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        const cond = sel.typeCondition ? this.schema.getType(sel.typeCondition.name.value) : type;
        total += this.selectionCost(sel.selectionSet, cond ?? type, perItem);
      } else {
        total += this.spreadCost(sel.name.value, perItem);
      }
    }
    return total;
  }

  private spreadCost(name: string, perItem: number): number {
    const fragment = this.fragments.get(name);
    if (!fragment || this.visiting.has(name)) {
      return 0; // unknown fragments and cycles are validation errors reported elsewhere
    }
    const key = perItem === 1 ? name : `${name}\u0000${perItem}`;
    let cost = this.fragmentCost.get(key);
    if (cost === undefined) {
      const type = typeFromAST(this.schema, fragment.typeCondition);
      this.visiting.add(name);
      cost = type ? this.selectionCost(fragment.selectionSet, type, perItem) : 0;
      this.visiting.delete(name);
      this.fragmentCost.set(key, cost);
    }
    return cost;
  }

  private fieldCost(node: FieldNode, parent: GraphQLNamedType): number {
    if (!('getFields' in parent)) {
      return 0; // __typename on a union
    }
    const name = node.name.value;
    const field =
      parent === this.schema.getQueryType() && (name === '__schema' || name === '__type')
        ? name === '__schema'
          ? SchemaMetaFieldDef
          : TypeMetaFieldDef
        : (parent.getFields() as Record<string, GraphQLField<unknown, unknown>>)[name];
    if (!field) {
      return 0; // __typename, or unknown (a validation error)
    }
    const info = fieldInfo(parent, field);
    if (info.introspection) {
      const own = 1 / INTROSPECTION_FIELDS_PER_POINT;
      if (!node.selectionSet) {
        return own;
      }
      const n = introspectionSizes(this.schema).get(`${parent.name}.${name}`) ?? 1;
      return own + n * this.selectionCost(node.selectionSet, getNamedType(field.type));
    }
    if (!node.selectionSet) {
      return info.own;
    }
    const named = getNamedType(field.type);
    const paginated = info.multiplies || info.connection;
    const n = paginated ? pageSize(getArgumentValues(field, node, this.variables)) : 1;
    if (info.connection) {
      return info.own + this.selectionCost(node.selectionSet, named, n);
    }
    return info.own + (info.multiplies ? n : 1) * this.selectionCost(node.selectionSet, named);
  }
}

/**
 * The cost of one operation (docs/graphql.md "Limits"): 1 per field, scalars included; `@cost`
 * replaces a field's own cost (large text fields cost more); a list or paginated field multiplies
 * its selection by first/last (default 20); a connection multiplies only its `edges`/`nodes`.
 * Introspection fields count a tenth of a point each, their lists as long as the schema's on
 * average (INTROSPECTION_FIELDS_PER_POINT); the total is rounded up. Throws a GraphQLError when the
 * variables do not coerce.
 */
function computeCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown>,
  operationName?: string,
): number {
  const operation = getOperationAST(document, operationName);
  if (!operation) {
    return 0;
  }
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables, {
    maxErrors: 1,
  });
  if (coerced.errors) {
    throw coerced.errors[0] ?? new GraphQLError('Invalid variables');
  }
  const root = schema.getRootType(operation.operation);
  if (!root) {
    return 0;
  }
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(def.name.value, def);
    }
  }
  const total = new CostWalker(schema, fragments, coerced.coerced).selectionCost(
    operation.selectionSet,
    root,
  );
  // tenths of a point add up with rounding errors: 0.30000000000000004 is 1 point, not 2
  return Math.ceil(Math.round(total * 1000) / 1000);
}

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
  const cost = computeCost(schema, document, variables ?? {}, operationName ?? undefined);
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

/**
 * A subscription re-executes its selection for every event, so its cost is bounded tighter: about
 * what one 256 KiB event can carry (1 point per 2 500 characters of large text).
 */
export const MAX_SUBSCRIPTION_COST = 100;

/**
 * An introspection-only query whose answer is already in memory (introspection-cache.ts) costs
 * this share of its computed cost: serving it is one serialization of the kept answer, where an
 * executed one is also parsed, validated and executed. Measured on this schema with the standard
 * query (every option of `getIntrospectionQuery`): about 28 ms executed against 1.9 ms served from
 * memory, so a fifteenth. Apollo Sandbox polls its schema every few seconds: at the default
 * budget it could poll 22 times a minute at the full price, and far more than that at this one
 * (docs/graphql.md "Limits").
 */
const CACHED_INTROSPECTION_SHARE = 15;

/** The cost of a cached introspection answer whose execution costs `full` (at least 1 point). */
export function cachedIntrospectionCost(full: number): number {
  return Math.max(1, Math.ceil(full / CACHED_INTROSPECTION_SHARE));
}

export function tooComplex(cost: number, limit = MAX_QUERY_COST): GraphQLError {
  return new GraphQLError(
    `Query cost ${cost} exceeds the maximum of ${limit}${limit === MAX_SUBSCRIPTION_COST ? ' for a subscription (charged again for every event)' : ''}: request fewer items (first/last) or fewer fields`,
    { extensions: { code: 'QUERY_TOO_COMPLEX', cost: { requested: cost, limit } } },
  );
}
