import { checkResponse } from './openapi.js';

export interface Credentials {
  bearer?: string;
  basic?: [string, string];
  apiKey?: string;
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  /** Sent as-is (no JSON encoding) when set. */
  rawBody?: string;
  headers?: Record<string, string>;
  auth?: Credentials;
}

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export function authHeaders(auth?: Credentials): Record<string, string> {
  if (!auth) {
    return {};
  }
  if (auth.bearer) {
    return { authorization: `Bearer ${auth.bearer}` };
  }
  if (auth.basic) {
    return { authorization: `Basic ${Buffer.from(auth.basic.join(':')).toString('base64')}` };
  }
  if (auth.apiKey) {
    return { 'x-api-key': auth.apiKey };
  }
  return {};
}

/** A real HTTP request to the running app (fetch); the body is parsed as JSON when it is JSON. */
export async function request<T = any>(
  base: string,
  path: string,
  opts: RequestOptions = {},
): Promise<TestResponse<T>> {
  const headers: Record<string, string> = { ...authHeaders(opts.auth), ...opts.headers };
  let body: string | undefined;
  if (opts.rawBody !== undefined) {
    body = opts.rawBody;
  } else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${base}${path}`, {
    method: opts.method ?? 'GET',
    headers,
    body,
    redirect: 'manual',
  });
  const text = await res.text();
  // every response a test receives must be one the OpenAPI document describes (./openapi.ts)
  await checkResponse(base, {
    method: opts.method ?? 'GET',
    url: path,
    acceptVersion: Object.entries(headers).find(([k]) => k.toLowerCase() === 'accept-version')?.[1],
    status: res.status,
    contentType: res.headers.get('content-type'),
    text,
  });
  let parsed: unknown = undefined;
  const type = res.headers.get('content-type') ?? '';
  if (text && type.includes('json') && !type.includes('ndjson')) {
    parsed = JSON.parse(text);
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** A client bound to one app and (optionally) one set of credentials. */
export function client(base: string, auth?: Credentials) {
  return {
    get: <T = any>(path: string, o: RequestOptions = {}) =>
      request<T>(base, path, { auth, ...o, method: 'GET' }),
    head: <T = any>(path: string, o: RequestOptions = {}) =>
      request<T>(base, path, { auth, ...o, method: 'HEAD' }),
    post: <T = any>(path: string, body?: unknown, o: RequestOptions = {}) =>
      request<T>(base, path, { auth, ...o, method: 'POST', body }),
    put: <T = any>(path: string, body?: unknown, o: RequestOptions = {}) =>
      request<T>(base, path, { auth, ...o, method: 'PUT', body }),
    patch: <T = any>(path: string, body?: unknown, o: RequestOptions = {}) =>
      request<T>(base, path, { auth, ...o, method: 'PATCH', body }),
    delete: <T = any>(path: string, o: RequestOptions = {}) =>
      request<T>(base, path, { auth, ...o, method: 'DELETE' }),
    options: <T = any>(path: string, o: RequestOptions = {}) =>
      request<T>(base, path, { auth, ...o, method: 'OPTIONS' }),
  };
}

export type Client = ReturnType<typeof client>;
