import { GraphQLError, GraphQLScalarType, Kind, type ValueNode } from 'graphql';

// RFC 3339 date-time with a mandatory offset (Z or ±hh:mm); fractions of a second optional.
const RFC3339 =
  /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):([0-5]\d):([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):([0-5]\d))$/;

const CANONICAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function invalid(value: unknown): GraphQLError {
  return new GraphQLError(
    `DateTime must be an RFC 3339 date-time with an offset, such as 2026-11-21T22:12:14.123Z; got ${JSON.stringify(value)}`,
    {
      extensions: {
        code: 'BAD_USER_INPUT',
        details: [{ field: 'DateTime', message: 'invalid RFC 3339 date-time' }],
      },
    },
  );
}

/** Parses an RFC 3339 string (any offset) into the canonical UTC form with milliseconds. */
export function parseDateTime(value: unknown): string {
  if (typeof value !== 'string' || !RFC3339.test(value)) {
    throw invalid(value);
  }
  const date = new Date(value.replace(/:60(\.|Z|z|[+-])/, ':59$1'));
  if (Number.isNaN(date.getTime())) {
    throw invalid(value);
  }
  // reject calendar overflow such as 2026-02-30 (Date would roll it over)
  const [, y, m, d] = RFC3339.exec(value) ?? [];
  const offsetless = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
  if (offsetless.getUTCDate() !== Number(d)) {
    throw invalid(value);
  }
  return date.toISOString();
}

/**
 * `DateTime`: RFC 3339 in UTC with milliseconds on output (`2026-11-21T22:12:14.123Z`,
 * docs/contract.md section 3); any RFC 3339 string with an offset on input. Invalid input -> BAD_USER_INPUT.
 */
export const DateTimeScalar = new GraphQLScalarType<string, string>({
  name: 'DateTime',
  description:
    'RFC 3339 date-time. Output: UTC with milliseconds (2026-11-21T22:12:14.123Z). Input: any offset.',
  specifiedByURL: 'https://datatracker.ietf.org/doc/html/rfc3339',
  serialize(value: unknown): string {
    if (value instanceof Date) {
      return value.toISOString();
    }
    if (typeof value === 'string') {
      return CANONICAL.test(value) ? value : parseDateTime(value);
    }
    throw new GraphQLError('DateTime cannot represent this value');
  },
  parseValue: (value: unknown) => parseDateTime(value),
  parseLiteral(ast: ValueNode): string {
    if (ast.kind !== Kind.STRING) {
      throw invalid(ast.kind);
    }
    return parseDateTime(ast.value);
  },
});
