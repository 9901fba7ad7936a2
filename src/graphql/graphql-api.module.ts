import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
} from '@apollo/server/plugin/disabled';
import type { ApolloDriverConfig } from '@nestjs/apollo';
import { Inject, Module, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { GraphqlContextFactory } from './context.factory.js';
import { depthLimitRule } from './depth-limit.rule.js';
import { CompiledApolloDriver, type CompiledDriverConfig } from './execution/compiled-driver.js';
import { DOCUMENT_LIMITS, MAX_VALIDATION_ERRORS } from './document-limits.js';
import { authDirectiveTransformer } from './directives/auth.directive.js';
import {
  cacheControlDirective,
  costDirective,
  withAuthDirective,
} from './directives/directives.js';
import { formatGraphqlError } from './format-error.js';
import { GraphqlCoreModule } from './graphql-core.module.js';
import { asSubgraph } from './federation/subgraph.js';
import { PersistedQueriesModule } from './persisted/persisted-queries.module.js';
import { PersistedQueryStore } from './persisted/apq-store.js';
import { TrustedDocumentsPlugin } from './persisted/trusted-documents.plugin.js';
import { TrustedDocumentsModule } from '../trusted-documents/trusted-documents.module.js';
import { operationPolicyPlugin } from './graphql.plugins.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { GRAPHQL_PATH, GraphqlWsServer } from './graphql-ws.server.js';
import { UpgradeRefusals } from './upgrade-refusals.js';
import { registerLandingPage, selfHostedGraphiql } from './landing-page.js';
import { NodeResolver } from './node.resolver.js';
import { NodeRegistry } from './node.js';
import { plainDataFields } from './data-fields.js';
import { PlainResolvers } from './plain-resolvers.js';
import { registerGraphqlPreHandler, requestLimits } from './request-limits.js';
import { guardLargeFields } from './response-size.js';
import './role.graphql.js';

/** "Did you mean ...?" hints name schema members: only in development, and never with introspection off. */
function hideSchemaDetails(config: AppConfig): boolean {
  return !config.graphqlDevelopment || !config.graphqlIntrospection;
}

/**
 * Apollo options from the configuration, for the GraphQLModule below. (`npm run schema:print` builds
 * the whole application, so the printed schema comes from these same options.)
 */
function apolloOptions(
  config: AppConfig,
  contexts: GraphqlContextFactory,
  plain: PlainResolvers,
  apq: PersistedQueryStore,
  nodes: NodeRegistry,
  metrics: MetricsService,
): CompiledDriverConfig {
  return {
    // graphql-jit behind Apollo's executor interface (src/graphql/execution/, docs/performance.md)
    compiledExecution: config.graphqlCompiledExecution,
    path: GRAPHQL_PATH,
    autoSchemaFile: true,
    sortSchema: true,
    buildSchemaOptions: {
      directives: [cacheControlDirective, costDirective],
      numberScalarMode: 'integer',
    },
    // data fields lose Nest's property-read resolvers (data-fields.ts), the plain resolvers of hot
    // fields are set (plain-resolvers.ts), then @auth wraps the root fields
    transformSchema: (schema) => {
      const served = withAuthDirective(plain.apply(plainDataFields(schema)));
      // GRAPHQL_FEDERATION: also an Apollo Federation 2 subgraph (federation/subgraph.ts)
      const federated = config.graphqlFederation ? asSubgraph(served, nodes) : served;
      return guardLargeFields(authDirectiveTransformer(federated));
    },
    // automatic persisted queries: in Redis when REDIS_URL is set (persisted/apq-store.ts)
    persistedQueries: apq.apolloOption(),
    introspection: config.graphqlIntrospection,
    // no CDN page: @nestjs/apollo's GraphiQL loads from unpkg. `false` disables Apollo's own landing
    // page; in development our self-hosted GraphiQL (landing-page.ts) is the one landing page
    graphiql: false,
    // replaced by a narrower check in the context factory (GET + Basic credentials only): see there
    csrfPrevention: false,
    hideSchemaDetailsFromClientErrors: hideSchemaDetails(config),
    includeStacktraceInErrorResponses: false,
    autoTransformHttpErrors: false,
    formatError: formatGraphqlError,
    validationRules: [depthLimitRule()],
    // documents over the limits are refused before Apollo sees them (requestLimits in request-limits.ts); the
    // token bound is repeated here, and validation stops after a few errors (each costs a scan)
    parseOptions: { maxTokens: DOCUMENT_LIMITS.maxTokens },
    validationOptions: { maxErrors: MAX_VALIDATION_ERRORS },
    plugins: [
      // Cache-Control comes from each document's hints, worked out once per document
      // (cache-policy.ts) instead of Apollo's plugin, which hooks every field of every response
      ApolloServerPluginCacheControlDisabled(),
      // a subgraph turns on Apollo's inline tracing, which hooks every field (no Studio reporting here)
      ...(config.graphqlFederation ? [ApolloServerPluginInlineTraceDisabled()] : []),
      operationPolicyPlugin(metrics),
      ...(config.graphqlDevelopment ? [selfHostedGraphiql] : []),
    ],
    // Fastify: Apollo calls the context function with (request, reply)
    context: (req: FastifyRequest, reply: FastifyReply) => contexts.forHttp(req, reply),
    fieldResolverEnhancers: [],
    stopOnTerminationSignals: false,
  };
}

/**
 * The GraphQL API at /graphql: Apollo Server 5 over Fastify for queries and mutations, graphql-ws
 * for operations over WebSocket (GraphqlWsServer). Resolvers live in their resource modules.
 */
@Module({
  imports: [
    GraphqlCoreModule,
    TrustedDocumentsModule,
    GraphQLModule.forRootAsync<ApolloDriverConfig>({
      driver: CompiledApolloDriver,
      imports: [GraphqlCoreModule, PersistedQueriesModule],
      inject: [
        APP_CONFIG,
        GraphqlContextFactory,
        PlainResolvers,
        PersistedQueryStore,
        NodeRegistry,
        MetricsService,
      ],
      useFactory: apolloOptions,
    }),
  ],
  providers: [NodeResolver, GraphqlWsServer, UpgradeRefusals, TrustedDocumentsPlugin],
})
export class GraphqlApiModule implements OnModuleInit {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly trusted: TrustedDocumentsPlugin,
  ) {}

  onModuleInit(): void {
    registerGraphqlPreHandler(
      this.adapterHost.httpAdapter.getInstance<FastifyInstance>(),
      GRAPHQL_PATH,
      [this.trusted.resolveDocument, requestLimits],
    );
    if (this.config.graphqlDevelopment) {
      registerLandingPage(
        this.adapterHost.httpAdapter.getInstance<FastifyInstance>(),
        GRAPHQL_PATH,
      );
    }
  }
}
