import {
  GraphQLError,
  type ArgumentNode,
  Kind,
  parse,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/**
 * Bounds on the shape of a document, checked after parsing and before validation (docs/graphql.md
 * "Limits"). graphql-js validation is super-linear in some shapes (OverlappingFieldsCanBeMerged
 * compares every pair of fields sharing a response name; repeated arguments and directives are
 * compared pairwise too), so a few kilobytes of the wrong shape would block the event loop for
 * seconds. Each bound keeps the worst case of validation and cost calculation to milliseconds while
 * leaving real queries (the full introspection query included) far below it.
 */
export const DOCUMENT_LIMITS = {
  /** Lexical tokens of the document (graphql-js `parse` stops at this many). */
  maxTokens: 10_000,
  /** Field selections in the document, fragments counted at every spread. */
  maxFields: 1_500,
  /** Aliased fields in the document, fragments counted at every spread. */
  maxAliases: 200,
  /**
   * Pairs of fields sharing a response name that validation compares (in one selection set, fragments
   * spread into it included, and recursively in the sub-selections of each pair).
   */
  maxFieldPairs: 1_000,
  /** Arguments of one field or directive. */
  maxArguments: 20,
  /** Directives on one field, fragment or operation. */
  maxDirectives: 10,
  /** Fragment definitions + operations in the document. */
  maxDefinitions: 100,
  /** Variable definitions of one operation. */
  maxVariables: 100,
} as const;

/** Validation stops after this many errors: each error scans the document for its line and column. */
export const MAX_VALIDATION_ERRORS = 20;

export type DocumentLimits = { readonly [K in keyof typeof DOCUMENT_LIMITS]: number };

function tooLarge(what: string, limit: number, extra: Record<string, unknown> = {}): GraphQLError {
  return new GraphQLError(`Document too complex: ${what} (at most ${limit})`, {
    extensions: { code: 'QUERY_TOO_COMPLEX', document: { limit, ...extra } },
  });
}

/** The fields of one selection level, by response name (inline fragments and spreads merged in). */
type Level = Map<string, FieldNode[]>;

/** Thrown inside the pair count when the budget is spent (caught in `run`). */
class BudgetSpent extends Error {}

/** Walks the document once; fragments are summarized once (memoized), so spreads cost no re-walk. */
class ShapeCheck {
  private readonly fragments = new Map<string, FragmentDefinitionNode>();
  private readonly expanded = new Map<string, { fields: number; aliases: number }>();
  private readonly levels = new Map<string, Level>();
  private pairs = 0;
  private readonly setLevels = new WeakMap<SelectionSetNode, Level>();
  private readonly visiting = new Set<string>();
  private error?: GraphQLError;

  constructor(
    private readonly document: DocumentNode,
    private readonly limits: DocumentLimits,
  ) {
    for (const def of document.definitions) {
      if (def.kind === Kind.FRAGMENT_DEFINITION) {
        this.fragments.set(def.name.value, def);
      }
    }
  }

  run(): GraphQLError | undefined {
    const { limits } = this;
    if (this.document.definitions.length > limits.maxDefinitions) {
      return tooLarge(`${this.document.definitions.length} definitions`, limits.maxDefinitions);
    }
    let fields = 0;
    let aliases = 0;
    for (const def of this.document.definitions) {
      if (def.kind !== Kind.OPERATION_DEFINITION && def.kind !== Kind.FRAGMENT_DEFINITION) {
        continue;
      }
      if (!this.checkDefinition(def)) {
        return this.error;
      }
      const counts = this.count(def.selectionSet);
      fields = Math.min(fields + counts.fields, Number.MAX_SAFE_INTEGER);
      aliases = Math.min(aliases + counts.aliases, Number.MAX_SAFE_INTEGER);
      if (fields > limits.maxFields) {
        return tooLarge('too many fields (fragments counted at every spread)', limits.maxFields);
      }
      if (aliases > limits.maxAliases) {
        return tooLarge('too many aliases', limits.maxAliases);
      }
    }
    // only once the totals are bounded: the field pairs validation will compare
    try {
      for (const def of this.document.definitions) {
        if (def.kind === Kind.OPERATION_DEFINITION || def.kind === Kind.FRAGMENT_DEFINITION) {
          this.pairsWithin(def.selectionSet);
        }
      }
    } catch (err) {
      if (err instanceof BudgetSpent) {
        return tooLarge(
          'too many fields share a response name (each pair is compared during validation)',
          limits.maxFieldPairs,
        );
      }
      throw err;
    }
    return undefined;
  }

  private fail(error: GraphQLError): false {
    this.error ??= error;
    return false;
  }

  private directivesOk(node: {
    directives?: readonly { arguments?: readonly unknown[] }[];
  }): boolean {
    const directives = node.directives ?? [];
    if (directives.length > this.limits.maxDirectives) {
      return this.fail(tooLarge('too many directives in one place', this.limits.maxDirectives));
    }
    for (const d of directives) {
      if ((d.arguments?.length ?? 0) > this.limits.maxArguments) {
        return this.fail(tooLarge('too many arguments on one directive', this.limits.maxArguments));
      }
    }
    return true;
  }

  private checkDefinition(def: OperationDefinitionNode | FragmentDefinitionNode): boolean {
    if (def.kind === Kind.OPERATION_DEFINITION) {
      const variables = def.variableDefinitions?.length ?? 0;
      if (variables > this.limits.maxVariables) {
        return this.fail(tooLarge('too many variables', this.limits.maxVariables));
      }
    }
    return this.directivesOk(def) && this.checkSet(def.selectionSet);
  }

  /** Syntactic checks on every node of a selection set (each node once: no expansion). */
  private checkSet(set: SelectionSetNode): boolean {
    for (const sel of set.selections) {
      if (!this.directivesOk(sel)) {
        return false;
      }
      if (sel.kind === Kind.FIELD) {
        if ((sel.arguments?.length ?? 0) > this.limits.maxArguments) {
          return this.fail(tooLarge('too many arguments on one field', this.limits.maxArguments));
        }
        if (!this.argumentsUnique(sel.arguments ?? [])) {
          return false;
        }
        if (sel.selectionSet && !this.checkSet(sel.selectionSet)) {
          return false;
        }
      } else if (sel.kind === Kind.INLINE_FRAGMENT && !this.checkSet(sel.selectionSet)) {
        return false;
      }
    }
    return true;
  }

  /**
   * A repeated argument is a validation error anyway (UniqueArgumentNames); reported here, once,
   * because validation would build one error per repetition, each scanning the document for its line.
   */
  private argumentsUnique(args: readonly ArgumentNode[]): boolean {
    if (args.length < 2) {
      return true;
    }
    const seen = new Set<string>();
    for (const arg of args) {
      if (seen.has(arg.name.value)) {
        return this.fail(
          new GraphQLError(`There can be only one argument named "${arg.name.value}".`, {
            nodes: [arg],
            extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
          }),
        );
      }
      seen.add(arg.name.value);
    }
    return true;
  }

  /** Fields and aliases under a selection set, fragments expanded at every spread (memoized, saturating). */
  private count(set: SelectionSetNode): { fields: number; aliases: number } {
    let fields = 0;
    let aliases = 0;
    const cap = Number.MAX_SAFE_INTEGER / 2;
    for (const sel of set.selections) {
      let sub: { fields: number; aliases: number } | undefined;
      if (sel.kind === Kind.FIELD) {
        fields += 1;
        aliases += sel.alias ? 1 : 0;
        sub = sel.selectionSet ? this.count(sel.selectionSet) : undefined;
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        sub = this.count(sel.selectionSet);
      } else {
        sub = this.fragmentCount(sel.name.value);
      }
      if (sub) {
        fields = Math.min(fields + sub.fields, cap);
        aliases = Math.min(aliases + sub.aliases, cap);
      }
    }
    return { fields, aliases };
  }

  private fragmentCount(name: string): { fields: number; aliases: number } {
    const known = this.expanded.get(name);
    if (known) {
      return known;
    }
    const fragment = this.fragments.get(name);
    if (!fragment || this.visiting.has(name)) {
      return { fields: 0, aliases: 0 }; // unknown fragments and cycles: validation reports them
    }
    this.visiting.add(name);
    const counts = this.count(fragment.selectionSet);
    this.visiting.delete(name);
    this.expanded.set(name, counts);
    return counts;
  }

  /** The fields at the level of `set`, by response name (inline fragments and spreads merged in). */
  private level(set: SelectionSetNode): Level {
    let names = this.setLevels.get(set);
    if (!names) {
      names = this.buildLevel(set);
      this.setLevels.set(set, names);
    }
    return names;
  }

  private buildLevel(set: SelectionSetNode): Level {
    const names: Level = new Map();
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        const name = sel.alias?.value ?? sel.name.value;
        const list = names.get(name);
        if (list) {
          list.push(sel);
        } else {
          names.set(name, [sel]);
        }
      } else {
        const inner =
          sel.kind === Kind.INLINE_FRAGMENT
            ? this.level(sel.selectionSet)
            : this.fragmentLevel(sel.name.value);
        for (const [name, fields] of inner) {
          const list = names.get(name);
          names.set(name, list ? list.concat(fields) : fields.slice());
        }
      }
    }
    return names;
  }

  private fragmentLevel(name: string): Level {
    const known = this.levels.get(name);
    if (known) {
      return known;
    }
    const fragment = this.fragments.get(name);
    if (!fragment || this.visiting.has(name)) {
      return new Map();
    }
    this.visiting.add(name);
    const level = this.level(fragment.selectionSet);
    this.visiting.delete(name);
    this.levels.set(name, level);
    return level;
  }

  private spend(n: number): void {
    this.pairs += n;
    if (this.pairs > this.limits.maxFieldPairs) {
      throw new BudgetSpent();
    }
  }

  /** Pairs of same-name fields compared within every selection set, and their sub-selections. */
  private pairsWithin(set: SelectionSetNode): void {
    for (const fields of this.level(set).values()) {
      for (let i = 0; i < fields.length; i++) {
        for (let j = i + 1; j < fields.length; j++) {
          this.spend(1);
          this.pairsBetween(fields[i], fields[j]);
        }
      }
    }
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD && sel.selectionSet) {
        this.pairsWithin(sel.selectionSet);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        this.pairsWithin(sel.selectionSet);
      }
    }
  }

  /** Two fields with one response name: their sub-selections are compared name by name. */
  private pairsBetween(a: FieldNode | undefined, b: FieldNode | undefined): void {
    if (!a?.selectionSet || !b?.selectionSet) {
      return;
    }
    const left = this.level(a.selectionSet);
    const right = this.level(b.selectionSet);
    for (const [name, fa] of left) {
      const fb = right.get(name);
      if (!fb) {
        continue;
      }
      this.spend(fa.length * fb.length);
      for (const x of fa) {
        for (const y of fb) {
          this.pairsBetween(x, y);
        }
      }
    }
  }
}

/** The first limit the document breaks, or undefined. Linear in the document's size. */
function checkDocumentShape(
  document: DocumentNode,
  limits: DocumentLimits = DOCUMENT_LIMITS,
): GraphQLError | undefined {
  return new ShapeCheck(document, limits).run();
}

/**
 * Parses with the token bound and checks the shape: the document, or the error to answer
 * (QUERY_TOO_COMPLEX for a limit, graphql-js's syntax error otherwise).
 */
export function parseBounded(
  query: string,
  limits: DocumentLimits = DOCUMENT_LIMITS,
): DocumentNode | GraphQLError {
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens: limits.maxTokens });
  } catch (err) {
    if (err instanceof GraphQLError && /more th\w+ \d+ tokens/.test(err.message)) {
      return tooLarge('too many tokens', limits.maxTokens);
    }
    return err instanceof GraphQLError ? err : new GraphQLError('Invalid query');
  }
  return checkDocumentShape(document, limits) ?? document;
}
