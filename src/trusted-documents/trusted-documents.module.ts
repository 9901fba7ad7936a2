import { Module } from '@nestjs/common';
import { TrustedDocumentsController } from './trusted-documents.controller.js';
import { TrustedDocumentsRepository } from './trusted-documents.repository.js';
import { TrustedDocumentsService } from './trusted-documents.service.js';

/** GraphQL trusted documents: the manifest, its storage and its REST routes (ADMIN). */
@Module({
  controllers: [TrustedDocumentsController],
  providers: [TrustedDocumentsRepository, TrustedDocumentsService],
  exports: [TrustedDocumentsService],
})
export class TrustedDocumentsModule {}
