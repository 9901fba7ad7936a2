import { createHash } from 'node:crypto';
import { getOperationAST, parse, validate, type GraphQLSchema } from 'graphql';
import type { ErrorDetail } from '../common/errors.js';

/** The persisted query list format of Apollo (`@apollo/generate-persisted-query-manifest`, GraphQL Codegen's client preset). */
const MANIFEST_FORMAT = 'apollo-persisted-query-manifest';

type OperationType = 'query' | 'mutation' | 'subscription';

export interface TrustedOperation {
  id: string;
  name: string;
  type: OperationType;
  body: string;
}

export interface Manifest {
  format: typeof MANIFEST_FORMAT;
  version: 1;
  operations: TrustedOperation[];
}

/** Bounds of one manifest: a frontend's operations, not a dump of every possible query. */
const MANIFEST_LIMITS = { maxOperations: 5000, maxIdLength: 200, maxBodyLength: 100_000 };

const TYPES: readonly OperationType[] = ['query', 'mutation', 'subscription'];

export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const MANIFEST_MEMBERS_REQUIRED = ['format', 'version', 'operations'] as const;
const MANIFEST_MEMBERS = new Set<string>(MANIFEST_MEMBERS_REQUIRED);
const OPERATION_MEMBERS = new Set(['id', 'name', 'type', 'body']);

/** Members the format does not define are refused, as every request body's are (docs/contract.md). */
function unknownMembers(
  value: Record<string, unknown>,
  known: Set<string>,
  prefix: string,
  errors: ErrorDetail[],
): void {
  for (const member of Object.keys(value)) {
    if (!known.has(member)) {
      errors.push({ field: `${prefix}${member}`, message: 'is not a member of this object' });
    }
  }
}

/**
 * Checks a manifest: the format and version, and for each operation a unique non-empty `id`, a
 * `name`, a `type`, and a `body` that parses, holds one operation of that type and validates
 * against `schema`. Answers the manifest, or every problem found (field paths as
 * `operations[3].body`).
 */
export function checkManifest(
  value: unknown,
  schema: GraphQLSchema,
): { manifest: Manifest } | { errors: ErrorDetail[] } {
  const errors: ErrorDetail[] = [];
  if (!isRecord(value)) {
    return { errors: [{ message: 'must be a JSON object' }] };
  }
  unknownMembers(value, MANIFEST_MEMBERS, '', errors);
  const missing = MANIFEST_MEMBERS_REQUIRED.filter((member) => value[member] === undefined);
  for (const member of missing) {
    errors.push({ field: member, message: `${member} is required` }); // as every input reports it
  }
  if (value.format !== undefined && value.format !== MANIFEST_FORMAT) {
    errors.push({ field: 'format', message: `must be "${MANIFEST_FORMAT}"` });
  }
  if (value.version !== undefined && value.version !== 1) {
    errors.push({ field: 'version', message: 'must be 1' });
  }
  if (!Array.isArray(value.operations)) {
    if (value.operations !== undefined) {
      errors.push({ field: 'operations', message: 'must be an array' });
    }
    return { errors };
  }
  if (value.operations.length === 0) {
    // an empty list would refuse every first-party operation in `enforce`: switch the mode off instead
    errors.push({ field: 'operations', message: 'must list at least one operation' });
    return { errors };
  }
  if (value.operations.length > MANIFEST_LIMITS.maxOperations) {
    errors.push({
      field: 'operations',
      message: `must hold at most ${MANIFEST_LIMITS.maxOperations} operations`,
    });
    return { errors };
  }
  const ids = new Set<string>();
  const operations: TrustedOperation[] = [];
  value.operations.forEach((op: unknown, i) => {
    const at = `operations[${i}]`;
    if (!isRecord(op)) {
      errors.push({ field: at, message: 'must be an object' });
      return;
    }
    unknownMembers(op, OPERATION_MEMBERS, `${at}.`, errors);
    const { id, name, type, body } = op;
    if (typeof id !== 'string' || id === '' || id.length > MANIFEST_LIMITS.maxIdLength) {
      errors.push({
        field: `${at}.id`,
        message: `must be a non-empty string of at most ${MANIFEST_LIMITS.maxIdLength} characters`,
      });
    } else if (ids.has(id)) {
      errors.push({ field: `${at}.id`, message: `"${id}" is listed twice (ids must be unique)` });
    } else {
      ids.add(id);
    }
    if (typeof name !== 'string') {
      errors.push({ field: `${at}.name`, message: 'must be a string' });
    }
    if (typeof type !== 'string' || !TYPES.includes(type as OperationType)) {
      errors.push({ field: `${at}.type`, message: 'must be query, mutation or subscription' });
    }
    if (typeof body !== 'string' || body === '' || body.length > MANIFEST_LIMITS.maxBodyLength) {
      errors.push({
        field: `${at}.body`,
        message: `must be a GraphQL document of at most ${MANIFEST_LIMITS.maxBodyLength} characters`,
      });
      return;
    }
    let problem: string | undefined;
    try {
      const document = parse(body);
      const invalid = validate(schema, document, undefined, { maxErrors: 5 });
      const operation = getOperationAST(document);
      if (invalid.length > 0) {
        problem = `does not validate against the schema: ${invalid.map((e) => e.message).join('; ')}`;
      } else if (!operation) {
        problem = 'must hold exactly one operation';
      } else if (operation.operation !== type) {
        problem = `is a ${operation.operation}, not a ${String(type)}`;
      }
    } catch (err) {
      problem = `does not parse: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (problem) {
      errors.push({ field: `${at}.body`, message: problem });
    } else if (typeof id === 'string' && typeof name === 'string') {
      operations.push({ id, name, type: type as OperationType, body });
    }
  });
  if (errors.length > 0) {
    return { errors };
  }
  return { manifest: { format: MANIFEST_FORMAT, version: 1, operations } };
}
