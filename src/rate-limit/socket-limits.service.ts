import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import { Inject, Injectable } from '@nestjs/common';
import { GraphQLError } from 'graphql';
import type { MaybeCaller } from '../identity/caller.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import {
  BUCKET_GRAPHQL_COST,
  BUCKET_REQUESTS,
  RateLimitService,
  secondsUntil,
} from './rate-limit.service.js';

interface PendingCharge {
  cost: number;
  resolve: (refused: GraphQLError | undefined) => void;
}

/** Anything that names one socket for its lifetime: an id, or the graphql-ws `Context` object itself. */
export type SocketRef = string | object;

/** The close code for "too many connections" (4000–4999 are the application's; 4429 mirrors HTTP 429). */
export const CLOSE_TOO_MANY_CONNECTIONS = 4429;

/**
 * WebSocket caps (docs/contract.md section 9): open graphql-ws connections per identity
 * (WS_MAX_CONNECTIONS_PER_IDENTITY) and operations running at once on one connection
 * (WS_MAX_OPERATIONS_PER_CONNECTION). Counted per instance: a socket lives on one instance, and a
 * counter in Redis would leak the connections of an instance that crashed.
 *
 * Wiring (graphql-ws server options):
 *   onConnect:   once the caller is known, `if (!limits.acquireConnection(ctx, identity))` close the
 *                socket with CLOSE_TOO_MANY_CONNECTIONS and return false;
 *   onClose:     `limits.releaseConnection(ctx)` (graphql-ws calls it for every socket, acknowledged or not);
 *   onSubscribe: `if (!limits.operationAllowed(ctx)) return [limits.tooManyOperationsError()]`, and
 *                once the cost is known `const refused = await limits.chargeOperation(ctx, cost)`:
 *                each operation counts as a request and spends its cost from the identity's budget.
 * Credentials in `connection_init` go through the credential door with `clientAddress(request)`.
 * Running operations are read from graphql-ws's own `ctx.subscriptions` (it adds an operation before
 * onSubscribe and drops it however it ends), so there is nothing to release and nothing to leak.
 */
@Injectable()
export class SocketLimitsService {
  private readonly identities = new Map<SocketRef, string>();
  private readonly perIdentity = new Map<string, number>();

  private readonly trusted = new BlockList();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly limits: RateLimitService,
  ) {
    for (const entry of config.trustedProxies) {
      if (entry === 'loopback') {
        this.trusted.addSubnet('127.0.0.0', 8, 'ipv4');
        this.trusted.addAddress('::1', 'ipv6');
        continue;
      }
      const [address = '', prefix] = entry.split('/');
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (isIP(address) === 0) {
        continue;
      }
      if (prefix === undefined) {
        this.trusted.addAddress(address, family);
      } else {
        this.trusted.addSubnet(address, Number(prefix), family);
      }
    }
  }

  /**
   * The client address of an upgrade request: the peer, or, when the peer is a trusted proxy
   * (TRUSTED_PROXIES), the nearest untrusted X-Forwarded-For entry (as Fastify's `trustProxy` does
   * for HTTP requests).
   */
  clientAddress(request: IncomingMessage): string {
    const chain = [request.socket.remoteAddress ?? 'unknown'];
    const forwarded = request.headers['x-forwarded-for'];
    if (typeof forwarded === 'string') {
      chain.push(
        ...forwarded
          .split(',')
          .map((a) => a.trim())
          .filter(Boolean)
          .reverse(),
      );
    }
    let i = 0;
    while (i < chain.length - 1 && this.isTrusted(chain[i] ?? '')) {
      i += 1;
    }
    return chain[i] ?? 'unknown';
  }

  /**
   * The host (and port) the client addressed an upgrade request to: `Host`, and, when the peer is a
   * trusted proxy, its `X-Forwarded-Host` too (a proxy may pass either as the browser sent it).
   */
  requestHosts(request: IncomingMessage): string[] {
    const hosts = request.headers.host ? [request.headers.host.toLowerCase()] : [];
    const forwarded = request.headers['x-forwarded-host'];
    if (typeof forwarded === 'string' && this.isTrusted(request.socket.remoteAddress ?? '')) {
      const first = forwarded.split(',', 1)[0]?.trim().toLowerCase();
      if (first) {
        hosts.push(first);
      }
    }
    return hosts;
  }

  private isTrusted(address: string): boolean {
    const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
    const family = isIP(plain);
    return family !== 0 && this.trusted.check(plain, family === 6 ? 'ipv6' : 'ipv4');
  }

  /** The identity a registered socket counts against ('ip:unknown' for one never registered). */
  identityOfSocket(socket: SocketRef): string {
    return this.identities.get(socket) ?? 'ip:unknown';
  }

  /** The identity a connection counts against (`identityOf`, or the client address when anonymous). */
  identityOf(caller: MaybeCaller, address: string): string {
    return this.limits.trackerOf(caller, address);
  }

  /**
   * An operation on a registered connection: one request from the identity's request bucket and
   * `cost` points from its GraphQL budget (the same counters as HTTP). The error to send when either
   * is used up, else undefined (also when the counter store is unavailable: fail open).
   */
  async chargeOperation(socket: SocketRef, cost: number): Promise<GraphQLError | undefined> {
    if (!this.config.rateLimitEnabled) {
      return undefined;
    }
    const identity = this.identities.get(socket) ?? 'ip:unknown';
    const request = await this.limits.hit(
      BUCKET_REQUESTS,
      identity,
      1,
      this.config.rateLimit,
      this.config.rateLimitWindowS,
    );
    if (request && !request.allowed) {
      return rateLimited(`Too many requests; retry in ${secondsUntil(request.resetMs)} s`);
    }
    return this.spend(
      identity,
      cost,
      (left, budget, retryS) =>
        `Query cost budget exhausted: this operation costs ${cost} points, ${left} of ${budget} are left; retry in ${retryS} s`,
    );
  }

  /** `cost` points from the identity's GraphQL budget; the RATE_LIMITED error when it is used up. */
  private async spend(
    identity: string,
    cost: number,
    message: (left: number, budget: number, retryS: number) => string,
  ): Promise<GraphQLError | undefined> {
    const budget = this.config.graphqlCostBudget;
    const spent = await this.limits.hit(
      BUCKET_GRAPHQL_COST,
      identity,
      cost,
      budget,
      this.config.graphqlCostWindowS,
    );
    if (spent && !spent.allowed) {
      return rateLimited(
        message(Math.max(0, budget - spent.count), budget, secondsUntil(spent.resetMs)),
      );
    }
    return undefined;
  }

  /**
   * One subscription event: `cost` points from the identity's GraphQL budget (no request counted).
   * The error to send when the budget is used up, else undefined (also when the store is unavailable).
   *
   * Charges are batched: the events charged to one identity in one turn of the event loop (one event
   * fanned out to its many sockets) are spent with one counter hit for their sum. When the sum does
   * not fit, each is charged on its own, in order, so exactly those that fit pass (as unbatched).
   */
  chargeEvent(socket: SocketRef, cost: number): Promise<GraphQLError | undefined> {
    if (!this.config.rateLimitEnabled || cost <= 0) {
      return Promise.resolve(undefined);
    }
    const identity = this.identities.get(socket) ?? 'ip:unknown';
    return new Promise((resolve) => {
      let batch = this.eventCharges.get(identity);
      if (!batch) {
        batch = [];
        this.eventCharges.set(identity, batch);
        if (!this.flushScheduled) {
          this.flushScheduled = true;
          setImmediate(() => this.flushEventCharges());
        }
      }
      batch.push({ cost, resolve });
    });
  }

  /**
   * One subscription event delivered to `sockets` (a group sharing one execution): `cost` points per
   * socket, charged as `chargeEvent` charges them (one counter hit per identity for the sum; when it
   * does not fit, one by one in order), but at once rather than in the next turn. The refusal of each
   * socket, by index (undefined: charged); an empty array when nothing is charged.
   */
  async chargeEvents(
    sockets: readonly SocketRef[],
    cost: number,
  ): Promise<(GraphQLError | undefined)[]> {
    if (!this.config.rateLimitEnabled || cost <= 0 || sockets.length === 0) {
      return [];
    }
    const refusals = new Array<GraphQLError | undefined>(sockets.length);
    const byIdentity = new Map<string, number[]>();
    sockets.forEach((socket, i) => {
      const identity = this.identities.get(socket) ?? 'ip:unknown';
      const indices = byIdentity.get(identity);
      if (indices) {
        indices.push(i);
      } else {
        byIdentity.set(identity, [i]);
      }
    });
    await Promise.all(
      [...byIdentity].map(
        ([identity, indices]) =>
          new Promise<void>((done) => {
            let left = indices.length;
            const batch = indices.map((i) => ({
              cost,
              resolve: (refusal: GraphQLError | undefined) => {
                refusals[i] = refusal;
                if (--left === 0) {
                  done();
                }
              },
            }));
            void this.chargeBatch(identity, batch);
          }),
      ),
    );
    return refusals;
  }

  private readonly eventCharges = new Map<string, PendingCharge[]>();
  private flushScheduled = false;

  private flushEventCharges(): void {
    this.flushScheduled = false;
    const batches = [...this.eventCharges];
    this.eventCharges.clear();
    for (const [identity, batch] of batches) {
      void this.chargeBatch(identity, batch);
    }
  }

  private async chargeBatch(identity: string, batch: PendingCharge[]): Promise<void> {
    const refusal = (cost: number) => (left: number, budget: number, retryS: number) =>
      `Query cost budget exhausted: each event of this subscription costs ${cost} points, ${left} of ${budget} are left; the subscription ends, subscribe again in ${retryS} s`;
    try {
      if (batch.length > 1) {
        const total = batch.reduce((sum, c) => sum + c.cost, 0);
        const spent = await this.limits.hit(
          BUCKET_GRAPHQL_COST,
          identity,
          total,
          this.config.graphqlCostBudget,
          this.config.graphqlCostWindowS,
        );
        if (!spent || spent.allowed) {
          batch.forEach((c) => c.resolve(undefined)); // spent, or the store is down: fail open
          return;
        }
      }
      for (const c of batch) {
        c.resolve(await this.spend(identity, c.cost, refusal(c.cost)));
      }
    } catch {
      batch.forEach((c) => c.resolve(undefined)); // as the store's own failures: fail open
    }
  }

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
    return (
      !this.config.rateLimitEnabled || Object.keys(ctx.subscriptions).length <= this.maxOperations
    );
  }

  /** The error an operation over the cap gets (sent as graphql-ws `error` message). */
  tooManyOperationsError(): GraphQLError {
    return rateLimited(
      `Too many operations on this connection (at most ${this.maxOperations} at once)`,
    );
  }
}

function rateLimited(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'RATE_LIMITED' } });
}
