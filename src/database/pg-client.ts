import pg from 'pg';

/** node-postgres' message when a statement got no answer within `query_timeout`. */
const QUERY_TIMEOUT_MESSAGE = 'Query read timeout';

/**
 * A node-postgres client that closes its connection when a statement times out (`query_timeout`).
 * node-postgres answers the caller with an error but keeps the connection, still waiting for that
 * statement: returned to the pool, it would hold every later statement behind a server that does not
 * answer. Closed, the pool drops it (it is no longer queryable) and opens a new one when needed; the
 * server rolls back whatever transaction it had open.
 */
export class ClosingOnTimeoutClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    // A connection the server ends (pg_terminate_backend, a restart) emits 'error'. pg-pool listens
    // while the client is idle and TypeORM's query runner while it holds it, yet such an 'error' once
    // found no listener (killed backends under load, test/db-connection-loss.e2e-spec.ts) and an
    // unheard 'error' ends the process. The client is unusable afterwards (not queryable): its query
    // got the error already, and the pool drops it when it is released.
    this.on('error', () => undefined);
    const query = this.query.bind(this) as (...args: unknown[]) => unknown;
    Object.assign(this, {
      query: (...args: unknown[]) => {
        const result = query(...args);
        if (result instanceof Promise) {
          result.catch((err: unknown) => {
            if (err instanceof Error && err.message === QUERY_TIMEOUT_MESSAGE) {
              this.closeConnection();
            }
          });
        }
        return result;
      },
    });
  }

  private closeConnection(): void {
    this.connection.stream.destroy();
  }
}
