import { Inject, Injectable } from '@nestjs/common';
import { GraphQLError } from 'graphql';
import { APP_CONFIG, type AppConfig } from '../config/config.js';

/** Anything that names one socket for its lifetime: an id, or the graphql-ws `Context` object itself. */
export type SocketRef = string | object;

interface OpenSocket {
  identity: string;
  operations: Set<string>;
}

/** The close code for "too many connections" (4000–4999 are the application's; 4429 mirrors HTTP 429). */
export const CLOSE_TOO_MANY_CONNECTIONS = 4429;

/**
 * WebSocket caps (DESIGN.md section 9): open graphql-ws connections per identity
 * (WS_MAX_CONNECTIONS_PER_IDENTITY) and operations running at once on one connection
 * (WS_MAX_OPERATIONS_PER_CONNECTION). Counted per instance: a socket lives on one instance, and a
 * counter in Redis would leak the connections of an instance that crashed.
 *
 * Wiring (graphql-ws server options):
 *   onConnect:   after the caller is known, `if (!limits.acquireConnection(ctx, identity))` close with
 *                CLOSE_TOO_MANY_CONNECTIONS (or return false);
 *   onSubscribe: `if (!limits.acquireOperation(ctx, id)) return [limits.tooManyOperationsError()]`;
 *   onComplete / onError: `limits.releaseOperation(ctx, id)`;   onClose: `limits.releaseConnection(ctx)`.
 */
@Injectable()
export class SocketLimitsService {
  private readonly sockets = new Map<SocketRef, OpenSocket>();
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
    const existing = this.sockets.get(socket);
    if (existing) {
      return existing.identity === identity;
    }
    const open = this.perIdentity.get(identity) ?? 0;
    if (this.config.rateLimitEnabled && open >= this.maxConnections) {
      return false;
    }
    this.perIdentity.set(identity, open + 1);
    this.sockets.set(socket, { identity, operations: new Set() });
    return true;
  }

  /** The connection closed: frees its slot and its operations. Safe to call twice or for unknown sockets. */
  releaseConnection(socket: SocketRef): void {
    const open = this.sockets.get(socket);
    if (!open) {
      return;
    }
    this.sockets.delete(socket);
    const left = (this.perIdentity.get(open.identity) ?? 1) - 1;
    if (left <= 0) {
      this.perIdentity.delete(open.identity);
    } else {
      this.perIdentity.set(open.identity, left);
    }
  }

  /**
   * Starts operation `operationId` on a registered connection; false when the connection already
   * runs the maximum (or was never registered). Re-using a running id answers true (graphql-ws
   * itself rejects duplicate ids).
   */
  acquireOperation(socket: SocketRef, operationId: string): boolean {
    const open = this.sockets.get(socket);
    if (!open) {
      return false;
    }
    if (open.operations.has(operationId)) {
      return true;
    }
    if (this.config.rateLimitEnabled && open.operations.size >= this.maxOperations) {
      return false;
    }
    open.operations.add(operationId);
    return true;
  }

  releaseOperation(socket: SocketRef, operationId: string): void {
    this.sockets.get(socket)?.operations.delete(operationId);
  }

  openConnections(identity: string): number {
    return this.perIdentity.get(identity) ?? 0;
  }

  runningOperations(socket: SocketRef): number {
    return this.sockets.get(socket)?.operations.size ?? 0;
  }

  /** The error an operation over the cap gets (sent as graphql-ws `error` message). */
  tooManyOperationsError(): GraphQLError {
    return new GraphQLError(`Too many operations on this connection (at most ${this.maxOperations} at once)`, {
      extensions: { code: 'RATE_LIMITED' },
    });
  }
}
