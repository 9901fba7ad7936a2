import { createHash } from 'node:crypto';

/** Strong entity tag of a serialized body. */
export function etagOf(payload: string | Buffer): string {
  return `"${createHash('sha1').update(payload).digest('base64url')}"`;
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
