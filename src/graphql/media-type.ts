const GQL_RESPONSE = 'application/graphql-response+json';

/**
 * True when Apollo will answer with `application/graphql-response+json` (the client ranks it above
 * application/json). Then request errors use 4xx statuses; under application/json they use 200
 * (GraphQL over HTTP, "application/json" legacy behaviour).
 */
export function wantsGraphqlResponseJson(accept: string | undefined | null): boolean {
  if (!accept) {
    return false;
  }
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
}
