import { Inject, Injectable } from '@nestjs/common';
import { GraphQLError } from 'graphql';
import { APP_CONFIG, type AppConfig } from '../config/config.js';

/** Anything that names one socket for its lifetime: an id, or the graphql-ws `Context` object itself. */
export type SocketRef = string | object;

/** The close code for "too many connections" (4000–4999 are the application's; 4429 mirrors HTTP 429). */
export const CLOSE_TOO_MANY_CONNECTIONS = 4429;

/**
 * WebSocket caps (DESIGN.md section 9): open graphql-ws connections per identity
 * (WS_MAX_CONNECTIONS_PER_IDENTITY) and operations running at once on one connection
 * (WS_MAX_OPERATIONS_PER_CONNECTION). Counted per instance: a socket lives on one instance, and a
 * counter in Redis would leak the connections of an instance that crashed.
 *
 * Wiring (graphql-ws server options):
 *   onConnect:   once the caller is known, `if (!limits.acquireConnection(ctx, identity))` close the
 *                socket with CLOSE_TOO_MANY_CONNECTIONS and return false;
 *   onClose:     `limits.releaseConnection(ctx)` (graphql-ws calls it for every socket, acknowledged or not);
 *   onSubscribe: `if (!limits.operationAllowed(ctx)) return [limits.tooManyOperationsError()]`.
 * Running operations are read from graphql-ws's own `ctx.subscriptions` (it adds an operation before
 * onSubscribe and drops it however it ends), so there is nothing to release and nothing to leak.
 */
@Injectable()
export class SocketLimitsService {
  private readonly identities = new Map<SocketRef, string>();
  private readonly perIdentity = new Map<string, number>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  get maxConnections(): number {
    return this.config.wsMaxConnectionsPerIdentity;
  }

  get maxOperations(): number {
    return this.config.wsMaxOperationsPerConnection;
  }

  /** Registers an open connection of `identity`; false (nothing registered) when it has too many. */
  acquireConnection(socket: SocketRef, identity: string): boolean {
    const existing = this.identities.get(socket);
    if (existing !== undefined) {
      return existing === identity;
    }
    const open = this.perIdentity.get(identity) ?? 0;
    if (this.config.rateLimitEnabled && open >= this.maxConnections) {
      return false;
    }
    this.perIdentity.set(identity, open + 1);
    this.identities.set(socket, identity);
    return true;
  }

  /** The connection closed: frees its slot. Safe to call twice or for a socket never registered. */
  releaseConnection(socket: SocketRef): void {
    const identity = this.identities.get(socket);
    if (identity === undefined) {
      return;
    }
    this.identities.delete(socket);
    const left = (this.perIdentity.get(identity) ?? 1) - 1;
    if (left <= 0) {
      this.perIdentity.delete(identity);
    } else {
      this.perIdentity.set(identity, left);
    }
  }

  openConnections(identity: string): number {
    return this.perIdentity.get(identity) ?? 0;
  }

  /**
   * May one more operation start on this connection? `ctx.subscriptions` is graphql-ws's registry of
   * the connection's operations, which already holds the one being subscribed.
   */
  operationAllowed(ctx: { subscriptions: Record<string, unknown> }): boolean {
    return !this.config.rateLimitEnabled || Object.keys(ctx.subscriptions).length <= this.maxOperations;
  }

  /** The error an operation over the cap gets (sent as graphql-ws `error` message). */
  tooManyOperationsError(): GraphQLError {
    return new GraphQLError(`Too many operations on this connection (at most ${this.maxOperations} at once)`, {
      extensions: { code: 'RATE_LIMITED' },
    });
  }
}
