import { Global, Module } from '@nestjs/common';
import { GraphqlContextFactory } from './context.factory.js';
import { NodeRegistry } from './node.js';

/** Providers every resolver module may inject (global): the node registry and the context factory. */
@Global()
@Module({
  providers: [GraphqlContextFactory, NodeRegistry],
  exports: [GraphqlContextFactory, NodeRegistry],
})
export class GraphqlCoreModule {}
