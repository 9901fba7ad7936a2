import type { FastifyReply, FastifyRequest } from 'fastify';

/** A deprecated REST operation or parameter, as the wire announces it (docs/changes.md). */
export interface RestDeprecation {
  /** When it was deprecated. */
  since: Date;
  /** When it may be removed (`Sunset`), if a date is set. */
  sunset?: Date;
  /** Where a client reads what to do instead (`Link: <…>; rel="deprecation"`). */
  link: string;
}

const marked = new WeakMap<FastifyRequest, RestDeprecation>();

/** Says that this request used something deprecated; its answer will announce it. */
export function markDeprecated(req: FastifyRequest, deprecation: RestDeprecation): void {
  marked.set(req, deprecation);
}

/**
 * On the way out (an `onSend` hook, so error answers carry them too): `Deprecation: @<unix seconds>`
 * (RFC 9745, https://www.rfc-editor.org/rfc/rfc9745), `Sunset: <HTTP-date>` (RFC 8594,
 * https://www.rfc-editor.org/rfc/rfc8594) when a removal date is set, and `Link: <docs>;
 * rel="deprecation"`. The link is appended: a list answer keeps its paging links.
 */
export function writeDeprecationHeaders(req: FastifyRequest, reply: FastifyReply): void {
  const deprecation = marked.get(req);
  if (!deprecation) {
    return;
  }
  void reply.header('Deprecation', `@${Math.floor(deprecation.since.getTime() / 1000)}`);
  if (deprecation.sunset) {
    void reply.header('Sunset', deprecation.sunset.toUTCString());
  }
  const link = `<${deprecation.link}>; rel="deprecation"`;
  const existing = reply.getHeader('link');
  void reply.header('Link', existing ? `${String(existing)}, ${link}` : link);
}
