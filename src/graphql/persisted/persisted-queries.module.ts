import { Module } from '@nestjs/common';
import { PersistedQueryStore } from './apq-store.js';

/** The APQ store, injected into the Apollo options (graphql-api.module.ts). */
@Module({
  providers: [PersistedQueryStore],
  exports: [PersistedQueryStore],
})
export class PersistedQueriesModule {}
