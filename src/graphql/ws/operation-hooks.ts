import type { IncomingMessage } from 'node:http';
import { Injectable } from '@nestjs/common';
import type { DocumentNode, ExecutionResult, GraphQLSchema } from 'graphql';
import type { MaybeCaller } from '../../identity/caller.js';

/** An operation over WebSocket that passed every check and is about to run. */
export interface WsOperationInfo {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName: string | null | undefined;
  caller: MaybeCaller;
  /**
   * A value the client gave for the connection: its `connection_init` payload first (browsers cannot
   * set headers on a WebSocket), else the header of the upgrade request.
   */
  clientValue: (name: string) => string | undefined;
}

/**
 * A value the client gave for its connection: from `connection_init` first (browsers cannot set
 * headers on a WebSocket), else the upgrade request's header.
 */
export function clientValue(
  params: Readonly<Record<string, unknown>> | undefined,
  upgrade: IncomingMessage,
  name: string,
): string | undefined {
  const given = params?.[name];
  if (typeof given === 'string') {
    return given;
  }
  const header = upgrade.headers[name];
  return typeof header === 'string' ? header : undefined;
}

/** Changes the answer of a query or mutation over WebSocket (e.g. adds to its `extensions`). */
export type WsResultDecorator = <T extends Pick<ExecutionResult, 'extensions'>>(result: T) => T;

/** Sees each accepted operation; may return a decorator for its answer. */
export type WsOperationHook = (operation: WsOperationInfo) => WsResultDecorator | undefined;

/**
 * What Apollo plugins are to operations over HTTP, for operations over WebSocket (which Apollo's
 * pipeline does not see): modules above `graphql/` (deprecation usage, for one) add a hook when they
 * start, and GraphqlWsServer runs the hooks for every operation it accepts. A decorator applies to
 * the single answer of a query or mutation; subscription events are shared by every subscriber of a
 * group (the same bytes), so they are not decorated.
 */
@Injectable()
export class WsOperationHooks {
  private readonly hooks: WsOperationHook[] = [];

  add(hook: WsOperationHook): void {
    this.hooks.push(hook);
  }

  /** Runs the hooks for an accepted operation: what they add to its answer, if anything. */
  accepted(operation: WsOperationInfo): WsResultDecorator | undefined {
    let decorators: WsResultDecorator[] | undefined;
    for (const hook of this.hooks) {
      const decorate = hook(operation);
      if (decorate) {
        (decorators ??= []).push(decorate);
      }
    }
    return decorators && ((result) => decorators.reduce((r, decorate) => decorate(r), result));
  }
}
