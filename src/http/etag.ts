import { hash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { RestPrecondition } from '../common/rest-precondition.js';

/**
 * Strong entity tag of a serialized body: SHA-1, base64url. The one-shot `crypto.hash` gives the
 * same digest as `createHash().update().digest()` at about half the CPU (no Hash object per call).
 */
export function etagOf(payload: string | Buffer): string {
  return `"${hash('sha1', payload, 'base64url')}"`;
}

function tags(header: string): string[] {
  return header.split(',').map((t) => t.trim());
}

/** If-None-Match uses the weak comparison (RFC 9110 13.1.2); `*` matches any current representation. */
export function noneMatchHits(header: string | undefined, etag: string): boolean {
  if (!header) {
    return false;
  }
  return tags(header).some((t) => t === '*' || t.replace(/^W\//, '') === etag);
}

/** If-Match uses the strong comparison (RFC 9110 13.1.1): weak tags never match. */
export function ifMatchHits(header: string, etag: string): boolean {
  return tags(header).some((t) => t === '*' || t === etag);
}

/** ETag of the single-resource body `{ data }` exactly as the GET handler serializes it. */
export function resourceEtag(data: unknown): string {
  return etagOf(JSON.stringify({ data }));
}

/**
 * The body `{ data }` of a write that returns a resource (201, PUT, PATCH), with the ETag a following
 * GET of that resource would send: a client can send it as If-Match on its next write without a GET.
 */
export function withEtag<T>(reply: FastifyReply, data: T): { data: T } {
  void reply.header('ETag', resourceEtag(data));
  return { data };
}

/**
 * `If-Match` as a precondition on a resource's current REST representation (`data`, as its GET
 * sends it): true when the header names its ETag or `*`. Undefined without the header. The service
 * calls it on the row it read in the write's transaction and answers 412 `precondition_failed`
 * when it is false, before changing anything.
 */
export function ifMatchPrecondition<T>(
  header: string | undefined,
): RestPrecondition<T> | undefined {
  return header ? (current: T) => ifMatchHits(header, resourceEtag(current)) : undefined;
}
