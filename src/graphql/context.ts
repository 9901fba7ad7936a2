import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MaybeCaller } from '../identity/caller.js';
import type { LoaderRegistry } from './loaders.js';
import type { ResponseSize } from './response-size.js';

/** The computed cost of an operation (docs/contract.md section 9), reported as `extensions.cost`. */
interface OperationCost {
  requested: number;
  limit: number;
  /** Further members (e.g. the per-identity budget's `remaining`, `resetAt`) may be added by plugins. */
  [extra: string]: unknown;
}

/**
 * The context every resolver receives (`@Context() ctx: GqlContext`), HTTP and WebSocket alike.
 * Built once per HTTP request (or once per WebSocket operation) by `GraphqlContextFactory`.
 */
export interface GqlContext {
  transport: 'http' | 'ws';
  /** undefined = anonymous (only introspection gets this far). */
  caller: MaybeCaller;
  /** Request-scoped DataLoaders (see loaders.ts). */
  loaders: LoaderRegistry;
  /** Set once the operation's cost has been computed (before execution). */
  cost?: OperationCost;
  requestId?: string;
  /** HTTP only: the large text fields resolved so far (response-size.ts). */
  responseSize?: ResponseSize;
  /** HTTP only. */
  req?: FastifyRequest;
  reply?: FastifyReply;
  /** WebSocket only: the connection_init payload. */
  connectionParams?: Record<string, unknown>;
  /**
   * WebSocket only: the socket's caller with its current rights (undefined once lapsed); asked
   * before each subscription event (src/graphql/current-rights.ts).
   */
  refreshCaller?: () => Promise<MaybeCaller>;
}
