/**
 * `If-Match` as a precondition on a resource's current REST representation (`data`, as its GET
 * sends it): true when the header names its ETag or `*`. Built by `ifMatchPrecondition`
 * (src/http/etag.ts); services take it as a plain function, so that they never import the HTTP
 * layer. The service calls it on the row it read in the write's transaction and answers 412
 * `precondition_failed` when it is false, before changing anything.
 */
export type RestPrecondition<T> = (current: T) => boolean;
