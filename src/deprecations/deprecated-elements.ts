import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';

/** One deprecated element of the schema, by its schema coordinate (`Post.content`). */
export interface DeprecatedElement {
  coordinate: string;
  kind: 'field' | 'argument' | 'input_field' | 'enum_value';
  reason: string;
}

/** One deprecated element an operation uses, and where (the response path, or the argument's field). */
export interface DeprecatedUse {
  coordinate: string;
  reason: string;
  path: string[];
}

interface SchemaDeprecations {
  elements: DeprecatedElement[];
  /**
   * Every name under which a document can reach a deprecated element (field, argument, input field
   * and enum value names): a document that contains none of them selects nothing deprecated, and
   * is not walked.
   */
  names: ReadonlySet<string>;
}

// keyed by schema and by document objects: Apollo keeps one parsed document per query text, so an
// operation sent again costs two map lookups
const bySchema = new WeakMap<GraphQLSchema, SchemaDeprecations>();
const byDocument = new WeakMap<DocumentNode, Map<string, DeprecatedUse[]>>();
const NONE: DeprecatedUse[] = [];

/** The deprecated fields, arguments, input fields and enum values of a schema (computed once). */
export function schemaDeprecations(schema: GraphQLSchema): SchemaDeprecations {
  let found = bySchema.get(schema);
  if (found) {
    return found;
  }
  const elements: DeprecatedElement[] = [];
  const names = new Set<string>();
  const add = (e: DeprecatedElement, name: string) => {
    elements.push(e);
    names.add(name);
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__')) {
      continue;
    }
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        const coordinate = `${type.name}.${field.name}`;
        if (field.deprecationReason) {
          add({ coordinate, kind: 'field', reason: field.deprecationReason }, field.name);
        }
        for (const arg of field.args) {
          if (arg.deprecationReason) {
            const reason = arg.deprecationReason;
            add({ coordinate: `${coordinate}(${arg.name}:)`, kind: 'argument', reason }, arg.name);
          }
        }
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) {
        if (field.deprecationReason) {
          const coordinate = `${type.name}.${field.name}`;
          add({ coordinate, kind: 'input_field', reason: field.deprecationReason }, field.name);
        }
      }
    } else if (isEnumType(type)) {
      for (const value of type.getValues()) {
        if (value.deprecationReason) {
          const coordinate = `${type.name}.${value.name}`;
          add({ coordinate, kind: 'enum_value', reason: value.deprecationReason }, value.name);
        }
      }
    }
  }
  elements.sort((a, b) => a.coordinate.localeCompare(b.coordinate));
  found = { elements, names };
  bySchema.set(schema, found);
  return found;
}

/** Whether any field, argument, input field or enum literal of the document bears one of `names`. */
function mentionsAny(document: DocumentNode, names: ReadonlySet<string>): boolean {
  const seen = (node: { name?: { value: string } }) =>
    node.name !== undefined && names.has(node.name.value);
  const inValue = (v: ValueNode): boolean => {
    switch (v.kind) {
      case Kind.ENUM:
        return names.has(v.value);
      case Kind.LIST:
        return v.values.some(inValue);
      case Kind.OBJECT:
        return v.fields.some((f) => names.has(f.name.value) || inValue(f.value));
      default:
        return false;
    }
  };
  const inSet = (set: SelectionSetNode | undefined): boolean =>
    set !== undefined &&
    set.selections.some((s) => {
      if (s.kind === Kind.FIELD) {
        return (
          seen(s) ||
          (s.arguments ?? []).some((a) => seen(a) || inValue(a.value)) ||
          inSet(s.selectionSet)
        );
      }
      return s.kind === Kind.INLINE_FRAGMENT ? inSet(s.selectionSet) : false;
    });
  return document.definitions.some(
    (d) =>
      (d.kind === Kind.OPERATION_DEFINITION || d.kind === Kind.FRAGMENT_DEFINITION) &&
      inSet(d.selectionSet),
  );
}

/**
 * The deprecated elements the operation uses: fields selected (by response path), arguments given,
 * and enum values and input fields written in the document. Values passed in variables are not
 * looked at (docs/changes.md). Cached per document and operation name.
 */
export function deprecatedUses(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
): DeprecatedUse[] {
  const { names } = schemaDeprecations(schema);
  if (names.size === 0) {
    return NONE;
  }
  let perOperation = byDocument.get(document);
  if (!perOperation) {
    perOperation = new Map();
    byDocument.set(document, perOperation);
    if (!mentionsAny(document, names)) {
      perOperation.set('*', NONE);
    }
  }
  const none = perOperation.get('*');
  if (none) {
    return none;
  }
  const key = operationName ?? '';
  let uses = perOperation.get(key);
  if (!uses) {
    uses = walkOperation(schema, document, operationName);
    perOperation.set(key, uses);
  }
  return uses;
}

function walkOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
): DeprecatedUse[] {
  const operations = document.definitions.filter(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
  );
  const operation = operationName
    ? operations.find((o) => o.name?.value === operationName)
    : operations.length === 1
      ? operations[0]
      : undefined;
  const root = operation ? schema.getRootType(operation.operation) : undefined;
  if (!operation || !root) {
    return NONE;
  }
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) {
    if (d.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(d.name.value, d);
    }
  }
  const uses: DeprecatedUse[] = [];
  const seen = new Set<string>();
  const use = (coordinate: string, reason: string, path: string[]) => {
    const id = `${coordinate} ${path.join('.')}`;
    if (!seen.has(id)) {
      seen.add(id);
      uses.push({ coordinate, reason, path });
    }
  };

  const walkValue = (value: ValueNode, type: GraphQLInputType, path: string[]): void => {
    const named = getNamedType(type);
    if (value.kind === Kind.LIST) {
      value.values.forEach((v) => walkValue(v, named, path));
    } else if (value.kind === Kind.ENUM && isEnumType(named)) {
      const v = named.getValue(value.value);
      if (v?.deprecationReason) {
        use(`${named.name}.${v.name}`, v.deprecationReason, path);
      }
    } else if (value.kind === Kind.OBJECT && isInputObjectType(named)) {
      const fields = named.getFields();
      for (const f of value.fields) {
        const def = fields[f.name.value];
        if (!def) {
          continue;
        }
        if (def.deprecationReason) {
          use(`${named.name}.${def.name}`, def.deprecationReason, path);
        }
        walkValue(f.value, def.type, path);
      }
    }
  };

  const walk = (
    set: SelectionSetNode,
    parent: GraphQLNamedType | undefined,
    path: string[],
    spread: ReadonlySet<string>,
  ): void => {
    for (const s of set.selections) {
      if (s.kind === Kind.INLINE_FRAGMENT) {
        const type = s.typeCondition ? schema.getType(s.typeCondition.name.value) : parent;
        walk(s.selectionSet, type, path, spread);
        continue;
      }
      if (s.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(s.name.value);
        if (fragment && !spread.has(fragment.name.value)) {
          const type = schema.getType(fragment.typeCondition.name.value);
          walk(fragment.selectionSet, type, path, new Set([...spread, fragment.name.value]));
        }
        continue;
      }
      if (!parent || !(isObjectType(parent) || isInterfaceType(parent))) {
        continue;
      }
      const field = parent.getFields()[s.name.value];
      if (!field) {
        continue;
      }
      const here = [...path, s.alias?.value ?? s.name.value];
      const coordinate = `${parent.name}.${field.name}`;
      if (field.deprecationReason) {
        use(coordinate, field.deprecationReason, here);
      }
      for (const a of s.arguments ?? []) {
        const arg = field.args.find((x) => x.name === a.name.value);
        if (!arg) {
          continue;
        }
        if (arg.deprecationReason) {
          use(`${coordinate}(${arg.name}:)`, arg.deprecationReason, here);
        }
        walkValue(a.value, arg.type, here);
      }
      if (s.selectionSet) {
        walk(s.selectionSet, getNamedType(field.type), here, spread);
      }
    }
  };
  walk(operation.selectionSet, root, [], new Set());
  return uses;
}
