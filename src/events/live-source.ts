/**
 * A subscription source that many subscribers can share: a local topic's live events, from the
 * moment of listening on (no replay, no per-subscriber state). The iterators EventsService hands to
 * the GraphQL subscriptions carry it under LIVE_SOURCE, so the WebSocket server can serve every
 * subscriber of a group (same document, variables and credential) from one listener instead of one
 * async iterator per socket (src/graphql/subscription-groups.ts).
 */
export const LIVE_SOURCE = Symbol.for('atrium.liveSource');

export interface LiveSource {
  /** Identifies the stream (the local topic): subscribers with equal keys see the same events. */
  readonly key: string;
  /**
   * Calls `listener` synchronously with each event from now on, in order; the function returned
   * detaches it. `weight` is how many subscribers the listener stands for (listenerCount).
   */
  listen(listener: (event: unknown) => void, weight: () => number): () => void;
}

/** The shareable source an iterator carries, if any. */
export function liveSourceOf(value: unknown): LiveSource | undefined {
  return typeof value === 'object' && value !== null
    ? ((value as { [LIVE_SOURCE]?: LiveSource })[LIVE_SOURCE] ?? undefined)
    : undefined;
}
