import Negotiator from 'negotiator';

const GQL_RESPONSE = 'application/graphql-response+json';

/**
 * True when Apollo will answer with `application/graphql-response+json` (the client ranks it above
 * application/json). Then request errors use 4xx statuses; under application/json they use 200
 * (GraphQL over HTTP, "application/json" legacy behaviour).
 */
export function wantsGraphqlResponseJson(accept: string | undefined | null): boolean {
  return !!accept && prefersGraphqlResponseJson(accept);
}

/**
 * `decide` remembered by Accept value: clients send a handful of distinct values, and negotiating
 * one (negotiator parses and ranks every range) cost ~3 % of a `user(id)` request. At most 256
 * values are kept, all forgotten when full, so odd values cost a negotiation each, as before.
 */
function byAccept(decide: (accept: string) => boolean): (accept: string) => boolean {
  const known = new Map<string, boolean>();
  return (accept) => {
    let answer = known.get(accept);
    if (answer === undefined) {
      answer = decide(accept);
      if (known.size >= 256) {
        known.clear();
      }
      known.set(accept, answer);
    }
    return answer;
  };
}

const prefersGraphqlResponseJson = byAccept((accept) => {
  let gql = 0;
  let json = 0;
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((s) => s.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) || 0 : 1;
    if (type === GQL_RESPONSE) {
      gql = Math.max(gql, q);
    } else if (type === 'application/json') {
      json = Math.max(json, q);
    } else if (type === '*/*' || type === 'application/*') {
      json = Math.max(json, q * 0.999); // a wildcard ranks below an explicit type
    }
  }
  return gql > 0 && gql > json;
});

/** The media types Apollo Server answers a single result with (its own list, in its order). */
const SINGLE_RESULT_TYPES = [
  'application/json; charset=utf-8',
  'application/graphql-response+json; charset=utf-8',
  'application/json; callbackSpec=1.0; charset=utf-8',
];

/**
 * False when no media type Apollo can answer with is acceptable to `accept`: the same negotiation
 * (same library, same list) Apollo runs, but Apollo runs it after executing the operation, so a
 * mutation sent with such an `Accept` was applied and then answered 406. Checked before execution.
 */
export function acceptsGraphqlResult(accept: string | undefined): boolean {
  return !accept || negotiatesSingleResult(accept);
}

const negotiatesSingleResult = byAccept(
  (accept) => new Negotiator({ headers: { accept } }).mediaType(SINGLE_RESULT_TYPES) !== undefined,
);

/** True when a GET prefers HTML, by Apollo's own test: its landing page answers those, not an operation. */
export function prefersHtml(accept: string | undefined): boolean {
  return !!accept && negotiatesHtml(accept);
}

const negotiatesHtml = byAccept(
  (accept) =>
    new Negotiator({ headers: { accept } }).mediaType([
      'application/json; charset=utf-8',
      'application/graphql-response+json; charset=utf-8',
      'multipart/mixed; deferSpec=20220824',
      'multipart/mixed; incrementalSpec=v0.2',
      'multipart/mixed',
      'text/html',
    ]) === 'text/html',
);
