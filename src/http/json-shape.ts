import type { FastifyInstance, FastifyRequest } from 'fastify';

/** Bounds on the shape of a JSON body (docs/limits.md): nesting depth and entries in all. */
export interface JsonShapeLimits {
  /** Deepest nesting of objects/arrays (`{"a":[1]}` is 2). */
  maxDepth: number;
  /** Object members plus array elements, all levels together. */
  maxItems: number;
}

const BACKSLASH = 0x5c;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/** Character classes of the scan: anything else (digits, letters, `.`, `-`, `:`) is `OTHER`. */
const OTHER = 0;
const SPACE = 1;
const QUOTE = 2;
const OPEN = 3;
const CLOSE = 4;
const COMMA = 5;
const CLASS = new Uint8Array(128);
for (const c of [0x20, 0x0a, 0x0d, 0x09]) {
  CLASS[c] = SPACE;
}
CLASS[0x22] = QUOTE;
CLASS[0x7b] = OPEN;
CLASS[0x5b] = OPEN;
CLASS[CLOSE_OBJECT] = CLOSE;
CLASS[CLOSE_ARRAY] = CLOSE;
CLASS[0x2c] = COMMA;

/**
 * Why `text` exceeds `limits`, or undefined. One pass over the characters, strings skipped with
 * `indexOf`, nothing allocated: it runs BEFORE `JSON.parse`, so a hostile body (thousands of levels,
 * which overflows the stack of recursive consumers such as class-transformer, or millions of tiny
 * entries) is refused without building it. It does not validate JSON: malformed text within the
 * bounds is left to the parser, which refuses it.
 */
export function jsonShapeViolation(text: string, limits: JsonShapeLimits): string | undefined {
  const { maxDepth, maxItems } = limits;
  const n = text.length;
  let depth = 0;
  let items = 0;
  // just after `{` or `[`: the next significant character tells whether the container is empty
  let opened = false;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    const kind = c < 128 ? CLASS[c] : OTHER;
    if (kind === SPACE || (kind === OTHER && !opened)) {
      continue; // the bulk of a body: digits, literals, whitespace
    }
    if (opened) {
      opened = false;
      if (kind !== CLOSE) {
        items++; // the first entry of a non-empty container (the others follow commas)
      }
    }
    if (kind === QUOTE) {
      // skip the string: the next quote not escaped by an odd run of backslashes
      let end = text.indexOf('"', i + 1);
      while (end !== -1) {
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) {
          slashes++;
        }
        if (slashes % 2 === 0) {
          break;
        }
        end = text.indexOf('"', end + 1);
      }
      if (end === -1) {
        return undefined; // unterminated string: the parser refuses it
      }
      i = end;
    } else if (kind === OPEN) {
      if (++depth > maxDepth) {
        return `The JSON body nests deeper than ${maxDepth} levels`;
      }
      opened = true;
    } else if (kind === CLOSE) {
      depth--;
    } else if (kind === COMMA) {
      if (++items > maxItems) {
        break;
      }
    }
  }
  if (items > maxItems) {
    return `The JSON body has more than ${maxItems} members and array elements`;
  }
  return undefined;
}

/** Thrown by the JSON body parser; becomes 400 `bad_request` (status read by the error filter). */
class JsonShapeError extends Error {
  readonly statusCode = 400;
  readonly code = 'ATRIUM_BODY_SHAPE';

  constructor(
    message: string,
    /** Where in the body, for the envelope's `details` (`[{field, message}]`). */
    readonly details?: { field: string; message: string }[],
  ) {
    super(message);
  }
}

/** Longest path of a member named in a refusal (a body's own key names are echoed). */
const MAX_PATH = 200;

/** `path.key`, or `path["key"]` for a key that is not a plain name. */
function memberPath(path: string, key: string): string {
  if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)) {
    return path === '' ? key : `${path}.${key}`;
  }
  return `${path}[${JSON.stringify(key)}]`;
}

function findForbidden(
  value: unknown,
  path: string,
): { field: string; message: string } | undefined {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findForbidden(value[i], `${path}[${i}]`);
      if (found) {
        return found;
      }
    }
    return undefined;
  }
  if (value === null || typeof value !== 'object') {
    return undefined;
  }
  const members = value as Record<string, unknown>;
  for (const key of Object.keys(members)) {
    const here = memberPath(path, key);
    const member = members[key];
    if (key === '__proto__') {
      return { field: here, message: 'member name "__proto__" is not allowed' };
    }
    if (
      key === 'constructor' &&
      member !== null &&
      typeof member === 'object' &&
      Object.hasOwn(member, 'prototype')
    ) {
      return {
        field: `${here}.prototype`,
        message: 'a member "prototype" inside a member "constructor" is not allowed',
      };
    }
    const found = findForbidden(member, here);
    if (found) {
      return found;
    }
  }
  return undefined;
}

/**
 * The member that made the secure JSON parser refuse `text` (`__proto__`, or `constructor` holding
 * `prototype`: names that change object prototypes when code copies or merges objects), with its
 * path in the body; undefined when the text is simply not JSON. Only runs on a refused body.
 * `JSON.parse` itself is safe here: it makes `__proto__` an own data member, never a prototype.
 */
export function forbiddenMember(text: string): { field: string; message: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const found = findForbidden(value, '');
  return (
    found && {
      field: found.field.length > MAX_PATH ? `${found.field.slice(0, MAX_PATH)}...` : found.field,
      message: found.message,
    }
  );
}

/** Requests refused by `jsonShapeViolation` or for a forbidden member, with the reason (so /graphql can answer in its own shape). */
export const refusedBodyShape = new WeakMap<FastifyRequest, string>();

/**
 * Fastify's own JSON parser (secure-json-parse: `__proto__` and `constructor.prototype` refused) for
 * `application/json` and `application/merge-patch+json`, behind the shape check; a body it refuses
 * for such a member is answered with the member's name and path (`forbiddenMember`). Every JSON body goes
 * through it: REST bodies and GraphQL over HTTP POST (query, variables, extensions).
 */
export function registerJsonParser(fastify: FastifyInstance, limits: JsonShapeLimits): void {
  const parse = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser(
    ['application/json', 'application/merge-patch+json'],
    { parseAs: 'string' },
    (req: FastifyRequest, body: string | Buffer, done) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      const violation = jsonShapeViolation(text, limits);
      if (violation !== undefined) {
        refusedBodyShape.set(req, violation);
        done(new JsonShapeError(violation), undefined);
        return;
      }
      void parse(req, text, (err, parsed) => {
        const forbidden = err ? forbiddenMember(text) : undefined;
        if (forbidden === undefined) {
          done(err, parsed);
          return;
        }
        // refused by the parser's prototype rules: say so, and where (not "not valid JSON")
        const reason = `The JSON body is refused: ${forbidden.message} (at ${forbidden.field}), as it can change object prototypes`;
        refusedBodyShape.set(req, reason);
        done(new JsonShapeError(reason, [forbidden]), undefined);
      });
    },
  );
}
