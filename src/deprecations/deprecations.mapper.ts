import type { DeprecationUsageResponse } from './deprecation-usage.response.js';
import type { DeprecationReport } from './deprecation-usage.service.js';

export function toUsageResponse(r: DeprecationReport): DeprecationUsageResponse {
  return {
    element: r.coordinate,
    kind: r.kind,
    reason: r.reason,
    clients: r.clients.map((c) => ({
      client: c.client,
      count: c.count,
      last_used_at: c.lastUsedAt,
    })),
  };
}
