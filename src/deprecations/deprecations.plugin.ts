import type {
  ApolloServerPlugin,
  GraphQLRequestContextExecutionDidStart,
  GraphQLRequestContextWillSendResponse,
  GraphQLRequestListener,
  GraphQLServerContext,
} from '@apollo/server';
import { Plugin } from '@nestjs/apollo';
import type { OnModuleInit } from '@nestjs/common';
import type { ExecutionResult } from 'graphql';
import { WsOperationHooks, type WsOperationInfo } from '../graphql/ws/operation-hooks.js';
import type { MaybeCaller } from '../identity/caller.js';
import { deprecatedUses, schemaDeprecations, type DeprecatedUse } from './deprecated-elements.js';
import { DeprecationUsageService } from './deprecation-usage.service.js';

interface HasCaller {
  caller: MaybeCaller;
}

/** What a client may call itself in `apollographql-client-name`/`-version` (printable, short). */
function label(value: string | undefined): string | undefined {
  const v = value
    ?.replace(/[^\x21-\x7e ]/g, '')
    .trim()
    .slice(0, 100);
  return v ? v : undefined;
}

/**
 * Who used a deprecated element: the OAuth client, else the API key, else the name (and version) a
 * client gives in `apollographql-client-name`/`-version`, else `first-party` (a user's own
 * credentials) or `anonymous`.
 */
function clientOf(caller: MaybeCaller, value: (name: string) => string | undefined): string {
  if (caller?.clientId) {
    return `oauth:${caller.clientId}`;
  }
  if (caller?.keyId) {
    return `api_key:${caller.keyId}`;
  }
  const name = label(value('apollographql-client-name'));
  if (name) {
    const version = label(value('apollographql-client-version'));
    return `name:${name}${version ? `@${version}` : ''}`;
  }
  return caller ? 'first-party' : 'anonymous';
}

/** The answer with `extensions.deprecations` (path, element, reason) of the uses it made. */
function withDeprecations<T extends Pick<ExecutionResult, 'extensions'>>(
  result: T,
  uses: DeprecatedUse[],
): T {
  return {
    ...result,
    extensions: {
      ...result.extensions,
      deprecations: uses.map((u) => ({ path: u.path, element: u.coordinate, reason: u.reason })),
    },
  };
}

/**
 * Counts each executed operation's uses of deprecated fields, arguments, input fields and enum
 * values per client (DeprecationUsageService), and tells the client in `extensions.deprecations`
 * (`path`, `element`, `reason`). Documents that mention no deprecated name are not walked
 * (deprecated-elements.ts), and the walk is done once per document. Operations over WebSocket are
 * counted the same way when accepted (WsOperationHooks), with the client named by the API key or OAuth
 * client of the connection, else `apollographql-client-name` in `connection_init` or the upgrade's
 * headers; a query or mutation's answer gets `extensions.deprecations` there too.
 */
@Plugin()
export class DeprecationsPlugin implements ApolloServerPlugin<HasCaller>, OnModuleInit {
  constructor(
    private readonly usage: DeprecationUsageService,
    private readonly wsHooks: WsOperationHooks,
  ) {}

  onModuleInit(): void {
    this.wsHooks.add((op: WsOperationInfo) => {
      const uses = deprecatedUses(op.schema, op.document, op.operationName);
      if (uses.length === 0) {
        return undefined;
      }
      this.usage.record(
        new Set(uses.map((u) => u.coordinate)),
        clientOf(op.caller, op.clientValue),
      );
      return (result) => withDeprecations(result, uses);
    });
  }

  async serverWillStart({ schema }: GraphQLServerContext): Promise<void> {
    this.usage.describe(schemaDeprecations(schema).elements);
  }

  async requestDidStart(): Promise<GraphQLRequestListener<HasCaller>> {
    let uses: DeprecatedUse[] = [];
    return {
      executionDidStart: async (rc: GraphQLRequestContextExecutionDidStart<HasCaller>) => {
        uses = deprecatedUses(rc.schema, rc.document, rc.operationName);
        if (uses.length > 0) {
          const coordinates = new Set(uses.map((u) => u.coordinate));
          this.usage.record(
            coordinates,
            clientOf(rc.contextValue.caller, (name) => rc.request.http?.headers.get(name)),
          );
        }
      },
      willSendResponse: async (rc: GraphQLRequestContextWillSendResponse<HasCaller>) => {
        if (uses.length === 0 || rc.response.body.kind !== 'single') {
          return;
        }
        rc.response.body.singleResult = withDeprecations(rc.response.body.singleResult, uses);
      },
    };
  }
}
