import { Global, Module } from '@nestjs/common';
import { GraphqlContextFactory } from './context.factory.js';
import { NodeRegistry } from './node.js';
import { PlainResolvers } from './plain-resolvers.js';

/**
 * Providers every resolver module may inject (global): the node registry, the plain resolvers of hot
 * fields and the context factory.
 */
@Global()
@Module({
  providers: [GraphqlContextFactory, NodeRegistry, PlainResolvers],
  exports: [GraphqlContextFactory, NodeRegistry, PlainResolvers],
})
export class GraphqlCoreModule {}
