import { Global, Module } from '@nestjs/common';
import { GraphqlContextFactory } from './context.factory.js';
import { NodeRegistry } from './node.js';
import { PlainResolvers } from './plain-resolvers.js';
import { WsOperationHooks } from './ws/operation-hooks.js';

/**
 * Providers every resolver module may inject (global): the node registry, the plain resolvers of hot
 * fields and the context factory.
 */
@Global()
@Module({
  providers: [GraphqlContextFactory, NodeRegistry, PlainResolvers, WsOperationHooks],
  exports: [GraphqlContextFactory, NodeRegistry, PlainResolvers, WsOperationHooks],
})
export class GraphqlCoreModule {}
