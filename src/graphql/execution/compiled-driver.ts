import type { ApolloServerOptionsWithGateway, BaseContext } from '@apollo/server';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Injectable } from '@nestjs/common';
import type { GraphQLSchema } from 'graphql';
import { CompiledExecutor, sameGraphql } from './compiled-executor.js';

/** Apollo's options with the switch: `compiledExecution: false` is the plain ApolloDriver. */
export type CompiledDriverConfig = ApolloDriverConfig & { compiledExecution?: boolean };

/**
 * Apollo Server with compiled execution (GRAPHQL_COMPILED_EXECUTION, docs/performance.md): the schema
 * Nest built is handed to Apollo through its public gateway interface, whose executor runs each
 * operation through CompiledExecutor. Parsing, validation, plugins, context and error formatting stay
 * Apollo's; only `execute` changes. Subscriptions do not pass through Apollo (graphql-ws.server.ts).
 */
@Injectable()
export class CompiledApolloDriver extends ApolloDriver {
  /** The executor, when compiled execution is on. */
  executor?: CompiledExecutor;

  override async start(config: CompiledDriverConfig): Promise<void> {
    const { compiledExecution = true, ...options } = config;
    if (!compiledExecution) {
      await super.start(options);
      return;
    }
    if (!options.schema) {
      throw new Error('CompiledApolloDriver: Nest built no schema');
    }
    if (!sameGraphql()) {
      throw new Error(
        'graphql-jit loads another copy of graphql than the application (GraphQLError would differ)',
      );
    }
    const { schema, ...rest } = options;
    // Apollo takes either a schema or a gateway; the gateway serves this one schema
    this.executor = new CompiledExecutor();
    // the options reach `new ApolloServer` whole, `gateway` included (ApolloDriverConfig omits it)
    const withGateway = { ...rest, gateway: schemaGateway(schema, this.executor) };
    await super.start(withGateway);
  }
}

type GatewayInterface = ApolloServerOptionsWithGateway<BaseContext>['gateway'];
type GatewayExecutor = NonNullable<Awaited<ReturnType<GatewayInterface['load']>>['executor']>;

/** A gateway (Apollo's public executor interface) serving one fixed schema with `executor`. */
function schemaGateway(schema: GraphQLSchema, executor: CompiledExecutor): GatewayInterface {
  const execute: GatewayExecutor = (rc) =>
    executor.execute({
      schema,
      document: rc.document,
      query: rc.source,
      // the name the client asked for (`rc.operationName` is the resolved operation's, null when none is)
      operationName: rc.request.operationName,
      variables: rc.request.variables,
      contextValue: rc.context,
    }) as ReturnType<GatewayExecutor>;
  return {
    load: () => Promise.resolve({ schema, executor: execute }),
    onSchemaLoadOrUpdate: (callback) => {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => undefined;
    },
    stop: () => Promise.resolve(),
  };
}
