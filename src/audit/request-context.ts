import { AsyncLocalStorage } from 'node:async_hooks';

/** What the audit log records about the request that made a change (docs/admin.md "Audit log"). */
export interface RequestContext {
  /** The request id of the response (`X-Request-Id`). */
  requestId: string;
  /** The client address (`req.ip`: the trusted-proxy rules apply). */
  ip: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` (the rest of a request's handling) with `context` as the current request. */
export function runInRequest<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The request being served, when the code runs on behalf of one (not at boot or in a timer). */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}
