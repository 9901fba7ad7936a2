import { createHash } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import formatsModule from 'ajv-formats';
import { errorEnvelopeSchema, errorSchemaName } from '../../src/common/openapi/errors.js';

/**
 * Keeps the OpenAPI document true: every REST response a test receives through the helpers
 * (`request()` in ./http.ts and the few direct `fetch` calls that use `checkResponse`) is checked
 * against the document the app serves at `/api/docs-json`:
 * - the status must be documented for the operation (method + path template) that answered it;
 * - a JSON body must match that response's schema (ajv over the dereferenced document, OpenAPI 3.0
 *   `nullable` turned into JSON Schema, and objects closed: a member the document does not list
 *   is an error, so a new field cannot go undocumented);
 * - a response documented without content (204, 304) must have no body.
 * A mismatch throws, so the test that received the response fails with the operation, the status
 * and ajv's errors.
 *
 * Not checked, each for its reason (the whole list):
 * - paths outside `/api/` and `/health/`: GraphQL, the OAuth protocol endpoints, /metrics (`exemption()`);
 * - `/api/docs*` (the document and Swagger UI themselves) and OPTIONS (Allow / CORS preflight, answered
 *   for every path by the HTTP layer, not an operation) (`exemption()`);
 * - refusals of Node's HTTP parser in raw-socket tests (408, 431, "Malformed HTTP request"), which
 *   precede any request (./raw-http.ts).
 * Answers no operation owns (unknown path 404, 405, unsupported version 400) are still checked
 * against the error envelope of their status; 301/308 version redirects have no body.
 */

type Json = Record<string, unknown>;

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  responses: Record<string, Json>;
}

interface CompiledDocument {
  root: Json;
  operations: Operation[];
  /** Compiled schemas by the document's schema object (each compiled once). */
  validators: Map<Json, ValidateFunction>;
  ajv: Ajv;
}

const addFormats = ((formatsModule as unknown as { default?: unknown }).default ??
  formatsModule) as (ajv: Ajv) => Ajv;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Documents by the text served (apps in one test process serve the same document: compiled once). */
const compiled = new Map<string, CompiledDocument>();
/** The served text per app base URL (fetched once per app). */
const served = new Map<string, Promise<string>>();

/**
 * Counts what was checked, one line per response in OPENAPI_STATS_FILE (test/global-setup.ts prints
 * the total); written at once because test processes may be ended without an exit event.
 */
function count(validated: boolean): void {
  const file = process.env.OPENAPI_STATS_FILE;
  if (file) {
    appendFileSync(file, validated ? '1 0\n' : '0 1\n');
  }
}

/** Resolves `$ref`s (local only), converts OpenAPI 3.0 schema keywords to JSON Schema. */
function toJsonSchema(node: unknown, root: Json, seen = new Map<string, unknown>()): unknown {
  if (Array.isArray(node)) {
    return node.map((n) => toJsonSchema(n, root, seen));
  }
  if (node === null || typeof node !== 'object') {
    return node;
  }
  const obj = node as Json;
  if (typeof obj.$ref === 'string') {
    const ref = obj.$ref;
    const cached = seen.get(ref);
    if (cached) {
      return cached;
    }
    const target = ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>(
        (at, key) => (at as Json)?.[key.replace(/~1/g, '/').replace(/~0/g, '~')],
        root,
      );
    if (target === undefined) {
      throw new Error(`OpenAPI document: unresolvable $ref ${ref}`);
    }
    const out: Json = {};
    seen.set(ref, out);
    Object.assign(out, toJsonSchema(target, root, seen) as Json);
    return out;
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(obj)) {
    if (key === 'example' || key === 'examples' || key === 'xml' || key === 'externalDocs') {
      continue;
    }
    if (key === 'properties' || key === 'patternProperties') {
      out[key] = Object.fromEntries(
        Object.entries(value as Json).map(([k, v]) => [k, toJsonSchema(v, root, seen)]),
      );
      continue;
    }
    out[key] = toJsonSchema(value, root, seen);
  }
  if (out.nullable === true) {
    delete out.nullable;
    if (Array.isArray(out.enum) && !out.enum.includes(null)) {
      out.enum = [...(out.enum as unknown[]), null];
    }
    if (typeof out.type === 'string') {
      out.type = [out.type, 'null'];
    } else if (out.type === undefined && !Array.isArray(out.enum)) {
      return { anyOf: [out, { type: 'null' }] };
    }
  } else {
    delete out.nullable;
  }
  // closed objects: every member a response carries must be in the document
  if (out.properties !== undefined && out.additionalProperties === undefined) {
    out.additionalProperties = false;
  }
  delete out.readOnly;
  delete out.writeOnly;
  delete out.deprecated;
  return out;
}

function compile(text: string): CompiledDocument {
  const doc = JSON.parse(text) as Json & { paths: Record<string, Record<string, Json>> };
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    const source = template
      .split(/(\{[^}]+\})/)
      .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('');
    for (const method of METHODS) {
      const op = item[method] as { responses?: Record<string, Json> } | undefined;
      if (op) {
        operations.push({
          method: method.toUpperCase(),
          template,
          pattern: new RegExp(`^${source}/?$`),
          responses: op.responses ?? {},
        });
      }
    }
  }
  // static templates first: `/users/batch` is not `/users/{id}`
  operations.sort((a, b) => Number(a.template.includes('{')) - Number(b.template.includes('{')));
  return { root: doc, operations, validators: new Map(), ajv };
}

async function documentFor(base: string): Promise<CompiledDocument> {
  let text = served.get(base);
  if (!text) {
    text = fetch(`${base}/api/docs-json`).then(async (res) => {
      if (res.status !== 200) {
        throw new Error(`OpenAPI check: GET ${base}/api/docs-json answered ${res.status}`);
      }
      return res.text();
    });
    served.set(base, text);
  }
  let body: string;
  try {
    body = await text;
  } catch (err) {
    // an app that cannot serve it right now (shutting down): every app of this code serves the
    // same document, so the one already compiled is the document of this app too
    const known = compiled.values().next().value;
    if (known) {
      served.delete(base);
      return known;
    }
    throw err;
  }
  const key = createHash('sha256').update(body).digest('hex');
  let doc = compiled.get(key);
  if (!doc) {
    doc = compile(body);
    compiled.set(key, doc);
  }
  return doc;
}

/**
 * Responses that are not checked, each with its reason. Anything else that the document does not
 * describe fails the test.
 */
function exemption(method: string, path: string): string | undefined {
  if (!path.startsWith('/api/') && !path.startsWith('/health/')) {
    // GraphQL (/graphql, its own schema and tests), the OAuth protocol endpoints (/oauth/*, shaped by
    // RFC 6749/OpenID and checked by oauth-protocol tests), /metrics (Prometheus text)
    return 'not part of the REST API the document describes';
  }
  if (/^\/api\/docs(-json)?(\/|$)/.test(path)) {
    return 'the document and Swagger UI themselves';
  }
  if (method === 'OPTIONS') {
    return 'OPTIONS (Allow / CORS preflight) is answered for every path by the HTTP layer, not an operation';
  }
  return undefined;
}

function describeErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .slice(0, 12)
    .map((e) => {
      const at = e.instancePath || '(body)';
      const extra =
        e.keyword === 'additionalProperties'
          ? ` "${(e.params as { additionalProperty: string }).additionalProperty}"`
          : e.keyword === 'enum'
            ? ` ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`
            : '';
      return `    ${at} ${e.message ?? e.keyword}${extra}`;
    })
    .join('\n');
}

export interface CheckedResponse {
  method: string;
  /** Full URL or path (with query) of the request. */
  url: string;
  /** `Accept-Version` of the request: `/api/<path>` with version 1 is served as `/api/v1/<path>`. */
  acceptVersion?: string;
  status: number;
  contentType: string | null;
  text: string;
}

/**
 * Checks one response against the document served by the app at `base`. Throws an Error naming
 * the operation, the status and what differs.
 */
export async function checkResponse(base: string, res: CheckedResponse): Promise<void> {
  const method = res.method.toUpperCase();
  let path = new URL(res.url, base).pathname;
  try {
    path = decodeURI(path); // the router matches the decoded path: `/api/v1/%70osts` is /posts
  } catch {
    // not percent-decodable: the router refuses it (400), matched below as an unknown path
  }
  if (
    res.acceptVersion !== undefined &&
    /^v?1$/i.test(res.acceptVersion.trim()) &&
    /^\/api\//.test(path) &&
    !/^\/api\/(v\d+|docs(-json)?)(\/|$)/.test(path)
  ) {
    path = `/api/v1/${path.slice('/api/'.length)}`; // src/http/http-hooks.ts rewriteUrl
  }
  if (exemption(method, path) !== undefined) {
    count(false);
    return;
  }
  const doc = await documentFor(base);
  const lookup = method === 'HEAD' ? 'GET' : method;
  const candidates = doc.operations.filter((op) => op.pattern.test(path));
  const op = candidates.find((o) => o.method === lookup);
  const where = `${method} ${path}`;
  let body: unknown;
  // NDJSON (the exports) is lines of JSON, not one document
  const isJson = /json/.test(res.contentType ?? '') && !/ndjson/.test(res.contentType ?? '');
  if (res.text !== '' && isJson) {
    try {
      body = JSON.parse(res.text);
    } catch {
      throw new Error(`OpenAPI check: ${where} answered ${res.status} with invalid JSON`);
    }
  }
  if (!op) {
    // No operation owns this answer: an unknown path (404), a method the path does not serve (405),
    // an unversioned or other-version URL (301/308, 400 unsupported_version). Its body is still
    // checked against the error envelope of its status (docs/contract.md).
    count(true);
    if (res.status < 400) {
      if (res.status === 301 || res.status === 308) {
        return; // redirect of an unversioned /api/ URL to /api/v1 (no body)
      }
      throw new Error(
        `OpenAPI check: ${where} answered ${res.status}, but the document has no operation ${lookup} for this path` +
          (candidates.length > 0
            ? ` (it documents ${candidates.map((c) => `${c.method} ${c.template}`).join(', ')})`
            : ''),
      );
    }
    // the document's envelope of this status, or (405: no operation refers to it) the same
    // generator's schema, with ErrorDetail from the document
    const envelope =
      ((doc.root.components as Json).schemas as Json)[errorSchemaName(res.status)] ??
      errorEnvelopeSchema(res.status);
    const validate = validatorFor(doc, envelope as Json);
    if (method !== 'HEAD' && !validate(body)) {
      throw new Error(
        `OpenAPI check: ${where} answered ${res.status} (no operation) with a body that is not the error envelope:\n` +
          `${describeErrors(validate.errors)}\n  body: ${res.text.slice(0, 500)}`,
      );
    }
    return;
  }
  const operation = `${op.method} ${op.template}`;
  const response =
    op.responses[String(res.status)] ??
    op.responses[`${String(res.status)[0]}XX`] ??
    op.responses.default;
  if (!response) {
    throw new Error(
      `OpenAPI check: ${operation} answered ${res.status}, which the document does not list for it ` +
        `(documented: ${Object.keys(op.responses).join(', ')}).\n  ${where}\n  body: ${res.text.slice(0, 500)}`,
    );
  }
  count(true);
  if (method === 'HEAD') {
    return;
  }
  const content = response.content as Record<string, { schema?: Json }> | undefined;
  if (!content) {
    if (res.text !== '') {
      throw new Error(
        `OpenAPI check: ${operation} answered ${res.status} with a body, but the document says it has none.\n  body: ${res.text.slice(0, 500)}`,
      );
    }
    return;
  }
  const schema = content['application/json']?.schema;
  if (!schema) {
    return; // documented as non-JSON content
  }
  if (!isJson) {
    throw new Error(
      `OpenAPI check: ${operation} answered ${res.status} with Content-Type ${res.contentType ?? '(none)'}, documented as application/json.\n  body: ${res.text.slice(0, 300)}`,
    );
  }
  const validate = validatorFor(doc, schema);
  if (!validate(body)) {
    throw new Error(
      `OpenAPI check: ${operation} answered ${res.status} with a body that does not match the document:\n` +
        `${describeErrors(validate.errors)}\n  ${where}\n  body: ${res.text.slice(0, 800)}`,
    );
  }
}

function validatorFor(doc: CompiledDocument, schema: Json): ValidateFunction {
  let validate = doc.validators.get(schema);
  if (!validate) {
    validate = doc.ajv.compile(toJsonSchema(schema, doc.root) as Json);
    doc.validators.set(schema, validate);
  }
  return validate;
}
