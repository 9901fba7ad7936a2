import {
  GraphQLError,
  validate,
  type DocumentNode,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';
import { MAX_VALIDATION_ERRORS, parseBounded } from '../document-limits.js';
import { formatGraphqlError } from '../format-error.js';

/** graphql-js appends "Did you mean ...?" to some validation messages: schema details. */
function withoutSuggestions(error: GraphQLFormattedError): GraphQLFormattedError {
  return { ...error, message: error.message.replace(/ ?Did you mean .+\?$/, '') };
}

/** Apollo's code for a graphql-js request error that carries none of its own (ours keep theirs). */
function withDefaultCode(error: GraphQLError, code: string): GraphQLError {
  if (error.extensions.code !== undefined) {
    return error;
  }
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, code },
  });
}

/**
 * The WebSocket server's documents and errors, as Apollo treats them over HTTP: documents parsed
 * within bounds and validated once per text (the schema and rules never change while running), and
 * errors formatted with Apollo's codes.
 */
export class WsDocuments {
  private readonly documents = new Map<string, DocumentNode | readonly GraphQLError[]>();

  constructor(
    private readonly schema: () => GraphQLSchema,
    private readonly rules: () => readonly ValidationRule[],
    /** Hints ("Did you mean") only in development with introspection on. */
    private readonly hints: boolean,
  ) {}

  /** The parsed and validated document of `query`, or its errors. */
  parseAndValidate(query: string): DocumentNode | readonly GraphQLError[] {
    let cached = this.documents.get(query);
    if (!cached) {
      // tokens, fields, aliases, same-name pairs, arguments: bounded before validation runs
      const document = parseBounded(query);
      if (document instanceof GraphQLError) {
        cached = [withDefaultCode(document, 'GRAPHQL_PARSE_FAILED')];
      } else {
        const errors = validate(this.schema(), document, this.rules(), {
          maxErrors: MAX_VALIDATION_ERRORS,
        });
        cached =
          errors.length > 0
            ? errors.map((e) => withDefaultCode(e, 'GRAPHQL_VALIDATION_FAILED'))
            : document;
      }
      if (this.documents.size > 500) {
        this.documents.clear();
      }
      this.documents.set(query, cached);
    }
    return cached;
  }

  format(error: GraphQLError): GraphQLFormattedError {
    let json = error.toJSON();
    if (json.extensions?.code === undefined && !error.originalError && !error.path) {
      // parse and validation errors got their code above: what is left is a variable that does
      // not coerce, BAD_USER_INPUT as Apollo says over HTTP
      json = { ...json, extensions: { ...json.extensions, code: 'BAD_USER_INPUT' } };
    }
    const formatted = formatGraphqlError(json, error);
    return this.hints ? formatted : withoutSuggestions(formatted);
  }
}
